import LogRecord
import Testing
import TextFormats
import TrafficReport

/// `--app`, `--host` and `--client` as `report` and `har` apply them (``TrafficSelection``).
@Suite("Selecting one app's, host's or device's lines")
struct TrafficSelectionTests {
    static let myApp =
        #"{"kind":"app","name":"MyApp","version":"1","cfnetwork":"1568.100.1","darwin":"24.0.0","ios":"18.0","user_agent":"MyApp/1 CFNetwork/1568.100.1 Darwin/24.0.0"}"#
    static let browser =
        #"{"kind":"other","name":null,"version":null,"cfnetwork":null,"darwin":null,"ios":null,"user_agent":"Mozilla/5.0"}"#

    static func connection(host: String, client: String, app: String?) throws -> LoggedConnection {
        let line =
            #"{"ts":"2026-11-28T10:00:00Z","client":"\#(client)","method":"CONNECT","scheme":"https","host":"\#(host)","port":443,"action":"allowed","app":\#(app ?? "null")}"#
        return try LoggedConnection(json: JSONValue(parsing: Array(line.utf8)))
    }

    static func request(host: String, url: String, client: String, app: String?) throws -> LoggedRequest {
        let line =
            #"{"ts":"2026-11-28T10:00:00Z","kind":"request","connection_id":1,"client":"\#(client)","host":"\#(host)","method":"GET","url":"\#(url)","http_version":"HTTP/1.1","send_ms":0,"duration_ms":1,"app":\#(app ?? "null")}"#
        return try LoggedRequest(json: JSONValue(parsing: Array(line.utf8)))
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let apps: [String]
        let hosts: [String]
        let clients: [String]
        /// Which of ``lines`` it keeps, by index.
        let kept: [Int]
        var testDescription: String { "app \(apps) host \(hosts) client \(clients)" }
    }

    /// MyApp on api.example.com from 192.168.1.23; a browser on cdn.example.com from 2001:db8::1;
    /// no User-Agent on api.example.com from 192.168.1.23.
    static func lines() throws -> [LoggedConnection] {
        [
            try connection(host: "api.example.com", client: "192.168.1.23:50312", app: myApp),
            try connection(host: "cdn.example.com", client: "[2001:db8::1]:443", app: browser),
            try connection(host: "api.example.com", client: "192.168.1.23:50313", app: nil),
        ]
    }

    static let cases: [Case] = [
        Case(apps: [], hosts: [], clients: [], kept: [0, 1, 2]),
        Case(apps: ["MyApp"], hosts: [], clients: [], kept: [0]),
        Case(apps: ["myapp"], hosts: [], clients: [], kept: [0]),
        Case(apps: ["other"], hosts: [], clients: [], kept: [1]),
        Case(apps: ["MyApp", "other"], hosts: [], clients: [], kept: [0, 1]),
        Case(apps: ["Nope"], hosts: [], clients: [], kept: []),
        Case(apps: [], hosts: ["api.example.com"], clients: [], kept: [0, 2]),
        Case(apps: [], hosts: ["*.example.com"], clients: [], kept: [0, 1, 2]),
        Case(apps: [], hosts: ["example.com"], clients: [], kept: []),
        Case(apps: [], hosts: [], clients: ["192.168.1.23"], kept: [0, 2]),
        Case(apps: [], hosts: [], clients: ["192.168.1.23:50313"], kept: [2]),
        Case(apps: [], hosts: [], clients: ["2001:db8::1"], kept: [1]),
        Case(apps: [], hosts: [], clients: ["[2001:db8::1]:443"], kept: [1]),
        Case(apps: ["MyApp"], hosts: ["cdn.example.com"], clients: [], kept: []),
        Case(apps: ["MyApp"], hosts: ["*.example.com"], clients: ["192.168.1.23"], kept: [0]),
    ]

    @Test("connection lines kept", arguments: cases)
    func connections(_ item: Case) throws {
        let selection = TrafficSelection(
            apps: item.apps, hosts: try item.hosts.map { try HostPattern(parsing: $0) }, clients: item.clients)
        let lines = try Self.lines()
        #expect(lines.indices.filter { selection.matches(lines[$0]) } == item.kept)
    }

    @Test("a request line matches by its URL's host too, and by its own app")
    func requests() throws {
        let request = try Self.request(
            host: "api.example.com", url: "https://api.example.com/v1", client: "192.168.1.23:50312", app: Self.myApp)
        let byURL = TrafficSelection(hosts: [try HostPattern(parsing: "*.example.com")])
        #expect(byURL.matches(request))
        #expect(TrafficSelection(apps: ["MyApp"]).matches(request))
        #expect(!TrafficSelection(apps: ["other"]).matches(request))
        let unnamed = try Self.request(
            host: "api.example.com", url: "https://api.example.com/v1", client: "192.168.1.23:50312", app: nil)
        #expect(!TrafficSelection(apps: ["MyApp"]).matches(unnamed), "a line naming no app is no app's")
    }

    @Test(
        "a client's device is its address without the port",
        arguments: [
            ("192.168.1.23:50312", "192.168.1.23"),
            ("[2001:db8::1]:443", "2001:db8::1"),
            ("[fe80::1%eth0]:8080", "fe80::1%eth0"),
            ("2001:db8::1", "2001:db8::1"),
            ("192.168.1.23", "192.168.1.23"),
            ("phone-7", "phone-7"),
            ("", ""),
            ("[2001:db8::1", "[2001:db8::1"),
        ])
    func deviceAddress(client: String, device: String) {
        #expect(TrafficSelection.deviceAddress(client) == device)
    }

    @Test("the description names what was selected")
    func description() throws {
        let selection = TrafficSelection(
            apps: ["MyApp", "other"], hosts: [try HostPattern(parsing: "*.example.com")], clients: ["192.168.1.23"])
        #expect(selection.description == "app MyApp or other, host *.example.com, client 192.168.1.23")
    }
}
