import ProxyWire
import Testing

@Suite("Header fields")
struct HTTPHeadersTests {
    static let sample = HTTPHeaders([
        (name: "Host", value: "e.example"),
        (name: "Accept", value: "text/html"),
        (name: "accept", value: "*/*"),
        (name: "Connection", value: "keep-alive, Upgrade"),
        (name: "CONNECTION", value: " , close"),
    ])

    @Test("lookups ignore case and keep order")
    func lookups() {
        let headers = Self.sample
        #expect(headers.first("HOST") == "e.example")
        #expect(headers.first("missing") == nil)
        #expect(headers.values(for: "Accept") == ["text/html", "*/*"])
        #expect(headers.contains("connection"))
        #expect(headers.listValues(for: "connection") == ["keep-alive", "Upgrade", "close"])
    }

    @Test("adding, replacing and removing")
    func editing() {
        var headers = Self.sample
        headers.removeAll("ACCEPT")
        #expect(!headers.contains("Accept"))
        #expect(headers.count == 3)
        headers.add(name: "X-New", value: "1")
        #expect(headers.last?.name == "X-New")
        headers.replaceOrAdd(name: "connection", value: "close")
        #expect(headers.values(for: "Connection") == ["close"])
        headers.replaceOrAdd(name: "X-Other", value: "2")
        #expect(headers.first("x-other") == "2")
        headers.insert(HTTPField(name: "First", value: "0"), at: -5)
        #expect(headers.first?.name == "First")
        headers.insert(HTTPField(name: "Last", value: "9"), at: 1_000)
        #expect(headers.last?.name == "Last")
    }
}
