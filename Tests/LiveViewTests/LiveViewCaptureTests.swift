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

/// A WireGuard device is named by its name in the live view: among a host's clients, and as the
/// client filter's value (docs/capture.md).
@Suite("LiveView: WireGuard devices by name")
struct LiveViewDeviceTests {
    static func wireguard(_ line: String, device: String) -> String {
        String(line.dropLast())
            + #","capture":"wireguard","original_destination":"10.78.0.3:443","server_name_mismatch":null,"device":"\#(device)","dns_name":null}"#
    }

    @Test("a device's lines show its name among the clients, and ?client=NAME selects them")
    func named() throws {
        let lines = [
            Self.wireguard(
                appLine("legacy.example.com", userAgent: nil, client: "10.65.84.2:50000", need: .tls10),
                device: "phone1"),
            appLine("other.example.com", userAgent: nil, client: "192.168.1.23:50001", need: .tls10),
        ]
        let site = liveSite(lines)
        let state = try JSONValue(parsing: try #require(site.response("/api/state.json")).body)
        let hosts = try #require(state["hosts"]?.arrayValue)
        let legacy = try #require(hosts.first { $0["host"]?.stringValue == "legacy.example.com" })
        #expect(legacy["clients"] == .strings(["phone1"]))
        #expect(state["capture"]?["wireguard"] == .int(1))
        #expect(state["summary"]?.stringValue?.contains("1 through WireGuard") == true)
        let answer = try JSONValue(parsing: try #require(site.response("/api/plist?client=phone1")).body)
        let plist = try #require(answer["plist"]?.stringValue)
        #expect(plist.contains("legacy.example.com") && !plist.contains("other.example.com"), "\(plist)")
    }
}
