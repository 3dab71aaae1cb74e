import ATSPolicy
import COpenSSL
import Foundation
import LogRecord
import ProxyWire
import TLSTestSupport
import Testing

@testable import ProxyCore

/// Issue 27 items 3 and 6 in intercept mode, scripted (``InterceptRig``): a device whose ALPN or
/// first bytes say HTTP is parsed as HTTP throughout, so a first request the strict parser refuses
/// gets its 400, 501 or 505 and its line, and never reaches the origin as an unlogged stream; and
/// every request must name the authority its connection was judged for.
@Suite("Intercept sessions, scripted: HTTP throughout, one authority")
struct InterceptParsePlaybookTests {
    static let host = "Host: api.example.com\r\n\r\n"

    /// A first request the review's lenient origin took as a request, while the proxy relayed it as
    /// a `tls_stream` and logged none: the status it gets with ALPN `http/1.1`, and without ALPN
    /// too, unless its first byte is one no request begins with (then it is another protocol).
    struct Form: Sendable, CustomTestStringConvertible {
        var name: String
        var bytes: [UInt8]
        var status: Int
        var relayedWithoutALPN = false
        /// The method and URL the refused request's line names: those of a request line read whole
        /// before the fault; nil when the line itself is at fault.
        var logged: (method: String, url: String)? = nil
        var testDescription: String { name }
    }

    static let items = (method: "GET", url: "https://api.example.com/v1/items")

    static let forms: [Form] = [
        Form(name: "two spaces after the method", bytes: bytes("GET  /v1/items HTTP/1.1\r\n" + host), status: 400),
        Form(name: "two spaces before the version", bytes: bytes("GET /v1/items  HTTP/1.1\r\n" + host), status: 400),
        Form(name: "a tab after the method", bytes: bytes("GET\t/v1/items HTTP/1.1\r\n" + host), status: 400),
        Form(name: "a tab before the version", bytes: bytes("GET /v1/items\tHTTP/1.1\r\n" + host), status: 400),
        Form(
            name: "a 33-byte method",
            bytes: bytes(String(repeating: "G", count: 33) + " /v1/items HTTP/1.1\r\n" + host),
            status: 501),
        Form(name: "HTTP/1.2", bytes: bytes("GET /v1/items HTTP/1.2\r\n" + host), status: 505),
        Form(name: "lower-case http/1.1", bytes: bytes("GET /v1/items http/1.1\r\n" + host), status: 400),
        Form(name: "HTTP/1.32", bytes: bytes("GET /v1/items HTTP/1.32\r\n" + host), status: 505),
        Form(name: "HTTP/2.0", bytes: bytes("GET /v1/items HTTP/2.0\r\n" + host), status: 505),
        Form(name: "a space after the version", bytes: bytes("GET /v1/items HTTP/1.1 \r\n" + host), status: 400),
        Form(name: "no version (HTTP/0.9)", bytes: bytes("GET /v1/items\r\n" + host), status: 400),
        Form(
            name: "a NUL method", bytes: [0] + bytes(" /v1/items HTTP/1.1\r\n" + host), status: 400,
            relayedWithoutALPN: true),
        Form(
            name: "a leading space", bytes: bytes(" GET /v1/items HTTP/1.1\r\n" + host), status: 400,
            relayedWithoutALPN: true),
        // Faults after a whole request line: the line names the request.
        Form(
            name: "a header line without a colon", bytes: bytes("GET /v1/items HTTP/1.1\r\nAccept json\r\n" + host),
            status: 400, logged: items),
        Form(
            name: "two Host fields",
            bytes: bytes("GET /v1/items HTTP/1.1\r\nHost: api.example.com\r\n" + host), status: 400, logged: items),
        Form(
            name: "a head of 101 header lines",
            bytes: bytes("GET /v1/items HTTP/1.1\r\n" + String(repeating: "X-Filler: y\r\n", count: 101) + host),
            status: 431, logged: items),
    ]

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test(
        "ALPN http/1.1: a first request the parser refuses gets its status and a line; nothing reaches the origin",
        arguments: forms)
    func refusedWithALPN(_ form: Form) throws {
        try Self.expectRefused(form, alpn: ["http/1.1"])
    }

    @Test(
        "no ALPN: first bytes that begin as a request are HTTP all the same; only a byte no request begins with is not",
        arguments: forms)
    func refusedWithoutALPN(_ form: Form) throws {
        if form.relayedWithoutALPN {
            try Self.expectRelayed(form.bytes)
        } else {
            try Self.expectRefused(form, alpn: [])
        }
    }

    /// The form's bytes as the device's first: answered with its status inside its TLS session, one
    /// request line saying why (with the method and URL the form logs), nothing upstream, the
    /// connection ended.
    static func expectRefused(_ form: Form, alpn: [String]) throws {
        let (bytes, status) = (form.bytes, form.status)
        let rig = try InterceptRig()
        let (_, _, device, origin) = try rig.intercepted(alpn: alpn)
        #expect(device.selectedProtocol == alpn.first, "the ALPN the test means")
        device.send(bytes)
        rig.settle()
        let answer = device.take()
        #expect(answer.hasPrefix("HTTP/1.1 \(status) "), "\(answer)")
        #expect(device.sawEnd, "the connection ends with the answer")
        #expect(origin.received.isEmpty, "not a byte reached the origin: \(origin.receivedText)")
        let lines = rig.environment.requests
        #expect(lines.count == 1)
        let line = try #require(lines.first)
        #expect(line.kind == .request && line.status == status)
        #expect(line.upstreamError?.hasPrefix("bad request: ") == true, "\(String(describing: line.upstreamError))")
        #expect(line.method == form.logged?.method && line.url == form.logged?.url)
        #expect(line.httpVersion == (form.logged == nil ? nil : "HTTP/1.1"), "what har needs of a request line")
    }

    /// `bytes` as the device's first, without ALPN: another protocol, relayed both ways, one
    /// `tls_stream` line once both ends have closed.
    static func expectRelayed(_ bytes: [UInt8]) throws {
        let rig = try InterceptRig()
        let (client, upstream, device, origin) = try rig.intercepted()
        #expect(device.selectedProtocol == nil)
        device.send(bytes)
        rig.settle()
        #expect(origin.received == bytes, "relayed as it came")
        origin.send([0xFF, 0x00])
        rig.settle()
        #expect(device.received == [0xFF, 0x00])
        device.closeNotify()
        client.peerEnds()
        origin.closeNotify()
        upstream.peerEnds()
        rig.settle()
        let line = try #require(rig.environment.requests.first)
        #expect(line.kind == .tlsStream && line.status == nil)
        #expect(line.requestBodyBytes == Int64(bytes.count) && line.responseBodyBytes == 2)
    }

    @Test(
        "a leading empty line is skipped, as on later requests: the request is answered",
        arguments: [
            (alpn: ["http/1.1"], lead: "\r\n"), (alpn: ["http/1.1"], lead: "\n"), (alpn: [], lead: "\r\n"),
            (alpn: [], lead: "\n"),
        ])
    func leadingEmptyLine(_ alpn: [String], _ lead: String) throws {
        let rig = try InterceptRig()
        let (_, _, device, origin) = try rig.intercepted(alpn: alpn)
        device.send(lead + InterceptPlaybookTests.request)
        rig.settle()
        #expect(origin.take() == InterceptPlaybookTests.forwardedRequest, "the request without the empty line")
        origin.send(InterceptPlaybookTests.response)
        rig.settle()
        #expect(device.take() == InterceptPlaybookTests.forwardedResponse)
        let line = try #require(rig.environment.requests.first)
        #expect(line.status == 200 && line.url == "https://api.example.com/v1/items")
    }

    @Test("no ALPN, a first request arriving a byte at a time: it waits for the method's end, then is HTTP")
    func firstBytesTrickle() throws {
        let rig = try InterceptRig()
        let (_, _, device, origin) = try rig.intercepted()
        for byte in "GET" {
            device.send(String(byte))
            rig.settle()
        }
        #expect(origin.received.isEmpty && rig.environment.requests.isEmpty, "undecided: nothing relayed")
        device.send("  /v1/items HTTP/1.1\r\n" + Self.host)
        rig.settle()
        #expect(device.take().hasPrefix("HTTP/1.1 400 "))
        #expect(origin.received.isEmpty)
        #expect(rig.environment.requests.first?.status == 400)
    }

    @Test("no ALPN, token bytes trickling in, then a byte no method has: another protocol, relayed whole")
    func trickleThenOtherProtocol() throws {
        let rig = try InterceptRig()
        let (client, upstream, device, origin) = try rig.intercepted()
        device.send("GE")
        rig.settle()
        #expect(origin.received.isEmpty && device.received.isEmpty, "undecided: nothing relayed, nothing answered")
        device.send([0x00, 0x01])
        rig.settle()
        #expect(origin.received == Array("GE".utf8) + [0x00, 0x01], "nothing was taken while it was undecided")
        #expect(device.received.isEmpty, "no 400: it is not HTTP")
        // Both ends close, so the relay ends and is logged (and lets go of its connections).
        device.closeNotify()
        client.peerEnds()
        origin.closeNotify()
        upstream.peerEnds()
        rig.settle()
        let line = try #require(rig.environment.requests.first)
        #expect(line.kind == .tlsStream && line.requestBodyBytes == 4)
    }

    @Test("no ALPN, a method that never ends: the head timeout answers it as a request (408)")
    func undecidedTimesOut() throws {
        let rig = try InterceptRig()
        let (_, _, device, origin) = try rig.intercepted()
        device.send("GE")
        rig.settle()
        rig.environment.advance(by: rig.environment.settings.headTimeout)
        device.send("T")
        rig.settle()
        #expect(device.take().hasPrefix("HTTP/1.1 408 "))
        #expect(origin.received.isEmpty)
        #expect(rig.environment.requests.first?.status == 408)
    }

    @Test("a page-style block: bytes that are not HTTP are not relayed to the blocked server")
    func blockedStreamNotRelayed() throws {
        let rig = try InterceptRig()
        // A certificate for another name: the handshake completes, and its verdict blocks.
        try rig.certificates.certificate(
            "elsewhere", issuer: "origin-root", key: "ec:P-256",
            extensions: ["subjectAltName=DNS:elsewhere.example", "extendedKeyUsage=serverAuth"])
        rig.environment.settings.intercept.blockStyle = .page
        let (_, _, device, origin) = try rig.intercepted(originCertificate: "elsewhere")
        device.send([0, 1, 2, 3])
        rig.settle()
        #expect(origin.received.isEmpty, "nothing reaches a blocked server")
        #expect(device.sawEnd)
        let line = try #require(rig.environment.requests.first)
        #expect(line.kind == .tlsStream && line.connection.action == .blocked)
        #expect(line.upstreamError?.contains("not relayed") == true)
    }

    // MARK: - Item 6: one authority

    /// Requests for the connection's own authority, written as clients write it, and requests for another.
    static let authorities: [(request: String, refused: Bool)] = [
        ("GET /v1/items HTTP/1.1\r\nHost: api.example.com\r\n\r\n", false),
        ("GET /v1/items HTTP/1.1\r\nHost: API.Example.COM:443\r\n\r\n", false),
        ("GET https://api.example.com/v1/items HTTP/1.1\r\nHost: api.example.com\r\n\r\n", false),
        ("GET /v1/items HTTP/1.1\r\nHost: evil.example\r\n\r\n", true),
        ("GET /v1/items HTTP/1.1\r\nHost: api.example.com:8443\r\n\r\n", true),
        ("GET http://evil.example/v1/items HTTP/1.1\r\nHost: api.example.com\r\n\r\n", true),
        ("GET https://evil.example/v1/items HTTP/1.1\r\n\r\n", true),
        ("GET https://api.example.com/v1/items HTTP/1.1\r\nHost: evil.example\r\n\r\n", true),
    ]

    @Test(
        "a Host or absolute-form target naming another authority gets a 400 and goes nowhere; the line's URL is the connection's",
        arguments: authorities)
    func authority(_ request: String, _ refused: Bool) throws {
        let rig = try InterceptRig()
        let (_, _, device, origin) = try rig.intercepted(alpn: ["http/1.1"])
        device.send(request)
        rig.settle()
        if refused {
            let answer = device.take()
            #expect(answer.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(answer)")
            #expect(answer.contains("this connection is to api.example.com"), "\(answer)")
            #expect(origin.received.isEmpty, "not a byte reached the origin: \(origin.receivedText)")
            #expect(device.sawEnd)
        } else {
            #expect(origin.take().hasPrefix("GET /v1/items HTTP/1.1\r\n"))
            origin.send(InterceptPlaybookTests.response)
            rig.settle()
            #expect(device.take() == InterceptPlaybookTests.forwardedResponse)
        }
        let line = try #require(rig.environment.requests.first)
        #expect(line.method == "GET")
        #expect(line.url == "https://api.example.com/v1/items", "the judged authority, whatever the request named")
        #expect(line.status == (refused ? 400 : 200))
        if refused {
            #expect(
                line.upstreamError?.hasPrefix("bad request: ") == true
                    && line.upstreamError?.contains("names") == true,
                "\(String(describing: line.upstreamError))")
        }
    }
}
