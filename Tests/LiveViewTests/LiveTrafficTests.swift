import LiveView
import Testing

@Suite struct LiveTrafficTests {
    @Test func starts() { _ = LiveTraffic() }
}
