import ProxyWire
import Testing
import TextFormats

@testable import LiveView

/// The live view counts connection lines by how they reached the proxy (docs/capture.md).
@Suite("LiveView: connections by capture path")
struct LiveViewCaptureTests {
    /// `line` as transparent mode logs it: `capture` and the address dialled at its end.
    static func captured(_ line: String) -> String {
        String(line.dropLast())
            + #","capture":"transparent","original_destination":"10.0.0.2:443","server_name_mismatch":null}"#
    }

    @Test("the summary and the JSON count proxy and transparent lines; lines without the field are the proxy setting's")
    func counts() throws {
        let lines = [
            appLine("api.myapp.test", userAgent: AppTraffic.myApp, client: AppTraffic.phone),
            Self.captured(appLine("game.example.com", userAgent: nil, client: AppTraffic.phone, need: .tls10)),
            Self.captured(appLine("cdn.example.com", userAgent: nil, client: AppTraffic.tablet)),
        ]
        let site = liveSite(lines)
        let state = try JSONValue(parsing: try #require(site.response("/api/state.json")).body)
        #expect(state["capture"] == .object([("proxy", .int(1)), ("transparent", .int(2)), ("wireguard", .int(0))]))
        #expect(state["summary"]?.stringValue?.contains("; 1 through the proxy setting, 2 transparent") == true)
        #expect(site.page("/").contains("1 through the proxy setting, 2 transparent"))

        // Only the proxy setting's: nothing said of capture.
        let plain = liveSite([lines[0]])
        let quiet = try JSONValue(parsing: try #require(plain.response("/api/state.json")).body)
        #expect(quiet["summary"]?.stringValue?.contains("transparent") == false)
        #expect(quiet["capture"]?["proxy"] == .int(1))
    }
}
