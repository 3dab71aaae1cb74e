import ATSPolicy
import EventLoop
import Foundation
import Glibc
import ProxyCore
import TLSInspection
import TLSTestSupport
import Testing

/// A real LAN client without a second machine: the proxy listens on every address (0.0.0.0), and
/// the test connects to an address one of this host's interfaces has (not loopback), so the
/// kernel gives the client that address too and the proxy sees a peer outside 127.0.0.0/8. The
/// same proxy then serves a loopback client through 127.0.0.1. Hosts with no such address skip.
private let lanAddress: String? = HostInterfaces.addresses()
    .first { $0.isIPv4 && LocalAddressKind($0) == nil }?.description

@Suite("Where a CONNECT may go", .startsProcesses(timeLimit: .seconds(60)), .enabled(if: lanAddress != nil))
struct DestinationTests {
    private static func start(
        _ factory: CertificateFactory, allowDestinations: [String] = [], hosts: HostsTable? = nil
    ) throws -> TestProxy {
        try TestProxy.start(factory, policyXML: insecureLocalhost, listenHost: "0.0.0.0", hosts: hosts) {
            $0.allowedClients = ProxySettings.loopback + [try! AddressRange(parsing: "\(lanAddress!)/32")]
            $0.allowedDestinations = allowDestinations.map { try! AddressRange(parsing: $0) }
            $0.handshakeTimeout = .seconds(1)
        }
    }

    @Test("a LAN client's CONNECT to 127.0.0.1 gets 403 denied, and the server behind it no connection")
    func lanToLoopback() throws {
        let factory = try compliantChain()
        let proxy = try Self.start(factory)
        defer { proxy.stop() }
        let server = try #require(LoopbackListener())
        let response = RawResponse(
            exchange(from: lanAddress!, proxy, "CONNECT 127.0.0.1:\(server.port) HTTP/1.1\r\n\r\n"))
        #expect(response.status == 403, "\(response)")
        let sentence =
            "atsproxy does not connect clients from \(lanAddress!) to 127.0.0.1:\(server.port), "
            + "a loopback address of the proxy's host; see --allow-destination"
        #expect(response.text.contains(sentence), "\(response)")
        #expect(!server.hasConnection(within: 0.5), "the proxy connected to the loopback server for a LAN client")
        let line = try proxy.onlyLogLine()
        #expect(line["action"] as? String == "denied", "\(line)")
        #expect(line["upstream"] as? String == "127.0.0.1:\(server.port)", "\(line)")
        #expect(line["upstream_error"] as? String == sentence, "\(line)")
    }

    @Test(
        "the same through a name the hosts file maps to 127.0.0.1, or to ::ffff:127.0.0.1",
        arguments: [
            "127.0.0.1", "::ffff:127.0.0.1",
        ])
    func lanToLoopbackByName(_ address: String) throws {
        let factory = try compliantChain()
        let hosts = try HostsTable(path: "hosts", text: "\(address) internal.test\n")
        let proxy = try Self.start(factory, hosts: hosts)
        defer { proxy.stop() }
        let server = try #require(LoopbackListener())
        let response = RawResponse(
            exchange(from: lanAddress!, proxy, "CONNECT internal.test:\(server.port) HTTP/1.1\r\n\r\n"))
        #expect(response.status == 403, "\(response)")
        #expect(response.text.contains("a loopback address of the proxy's host"), "\(response)")
        #expect(!server.hasConnection(within: 0.5), "the proxy connected to the loopback server for a LAN client")
        let line = try proxy.onlyLogLine()
        #expect(line["action"] as? String == "denied", "\(line)")
        #expect(line["upstream"] as? String == "127.0.0.1:\(server.port)", "\(line)")
    }

    @Test("--allow-destination 127.0.0.0/8 lets a LAN client through")
    func allowDestination() throws {
        let factory = try compliantChain()
        let proxy = try Self.start(factory, allowDestinations: ["127.0.0.0/8"])
        defer { proxy.stop() }
        let server = try #require(LoopbackListener())
        let response = RawResponse(
            exchange(from: lanAddress!, proxy, "CONNECT 127.0.0.1:\(server.port) HTTP/1.1\r\n\r\n"))
        #expect(response.status != 403, "\(response)")
        #expect(server.hasConnection(within: 1), "the proxy did not connect to the server --allow-destination opens")
    }

    @Test("a loopback client may reach 127.0.0.1")
    func loopbackClient() throws {
        let factory = try compliantChain()
        let proxy = try Self.start(factory)
        defer { proxy.stop() }
        let server = try #require(LoopbackListener())
        let response = RawResponse(
            exchange(from: "127.0.0.1", proxy, "CONNECT 127.0.0.1:\(server.port) HTTP/1.1\r\n\r\n"))
        #expect(response.status != 403, "\(response)")
        #expect(server.hasConnection(within: 1), "the proxy did not connect a loopback client to 127.0.0.1")
    }

    @Test("a verdict cached for a loopback client does not let a LAN client through")
    func cachedVerdict() throws {
        let factory = try compliantChain()
        let origin = try TestHTTPOrigin(directory: factory.directory)
        let proxy = try Self.start(factory)
        defer { proxy.stop() }
        let connect = "CONNECT localhost:\(origin.port) HTTP/1.1\r\n\r\n"
        let first = RawResponse(exchange(from: "127.0.0.1", proxy, connect))
        #expect(first.status == 200, "\(first)")
        _ = try proxy.waitForLogLines(1)
        let second = RawResponse(exchange(from: lanAddress!, proxy, connect))
        #expect(second.status == 403, "\(second)")
        let lines = try proxy.waitForLogLines(2)
        #expect(lines.map { $0.action ?? "?" } == ["allowed", "denied"], "\(lines)")
    }

    @Test("a CONNECT to the proxy's own address and port is denied for everyone, and does not nest")
    func loop() throws {
        let factory = try compliantChain()
        let proxy = try Self.start(factory)
        defer { proxy.stop() }
        // The listener is 0.0.0.0: both the LAN address and loopback reach it.
        for (client, target) in [(lanAddress!, lanAddress!), ("127.0.0.1", "127.0.0.1"), ("127.0.0.1", lanAddress!)] {
            let response = RawResponse(
                exchange(from: client, proxy, "CONNECT \(target):\(proxy.port) HTTP/1.1\r\n\r\n"))
            #expect(response.status == 403, "\(client) → \(target): \(response)")
            #expect(response.text.contains("the proxy's own listener 0.0.0.0:\(proxy.port)"), "\(response)")
        }
        // One connection and one line per client: the proxy never connected to itself (that would
        // be one more accepted, and one more line). Counted once every session has ended: a session
        // leaves the open count after writing its line.
        let lines = try proxy.waitForLogLines(3)
        #expect(eventually { proxy.loads.allSatisfy { $0.openConnections == 0 } }, "connections still open")
        #expect(proxy.loads.map(\.servedConnections).reduce(0, +) == 3, "the proxy accepted a connection from itself")
        let all = try proxy.logLines()
        #expect(all.count == 3, "\(all)")
        #expect(lines.allSatisfy { $0.action == "denied" }, "\(lines)")
    }

    @Test("a LAN client's plain GET http://127.0.0.1:port/ is denied; a loopback client's goes through")
    func plainRequest() throws {
        let factory = try compliantChain()
        let origin = try TestHTTPOrigin(directory: factory.directory)
        let proxy = try TestProxy.start(factory, policyXML: "", mode: .report, listenHost: "0.0.0.0") {
            $0.allowedClients = ProxySettings.loopback + [try! AddressRange(parsing: "\(lanAddress!)/32")]
        }
        defer { proxy.stop() }
        let request =
            "GET http://127.0.0.1:\(origin.port)/headers HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        let denied = RawResponse(exchange(from: lanAddress!, proxy, request))
        #expect(denied.status == 403, "\(denied)")
        #expect(denied.text.contains("a loopback address of the proxy's host"), "\(denied)")
        let line = try #require(try proxy.waitForLogLines(1).first)
        #expect(line.action == "denied", "\(line)")
        #expect(line.fields["upstream"] as? String == "127.0.0.1:\(origin.port)", "\(line)")

        let allowed = RawResponse(exchange(from: "127.0.0.1", proxy, request))
        #expect(allowed.status == 200, "\(allowed)")
        let lines = try proxy.waitForLogLines(2)
        #expect(lines.last?.action == "allowed", "\(lines)")
        #expect(lines.last?.fields["upstream"] as? String == "127.0.0.1:\(origin.port)", "\(lines)")
    }

    @Test("a client refused by --allow-client gets a denied log line")
    func refusedClient() throws {
        let factory = try compliantChain()
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost, listenHost: "0.0.0.0")
        defer { proxy.stop() }
        let response = RawResponse(exchange(from: lanAddress!, proxy, "CONNECT localhost:443 HTTP/1.1\r\n\r\n"))
        #expect(response.status == 403, "\(response)")
        let line = try proxy.onlyLogLine()
        #expect(line["action"] as? String == "denied", "\(line)")
        #expect(line["method"] as? String == "-", "\(line)")
        let reason = try #require(line["upstream_error"] as? String)
        #expect(
            reason.hasPrefix("client \(lanAddress!):")
                && reason.hasSuffix("is not allowed to use this proxy (see --allow-client)"))
    }
}

/// Sends `request` to the proxy at `address` (which also becomes the client's own address, the
/// kernel's choice for a local destination), half-closes, and returns the answer.
private func exchange(from address: String, _ proxy: TestProxy, _ request: String) -> [UInt8] {
    let descriptor = testSocket()
    guard descriptor >= 0 else { return [] }
    defer { close(descriptor) }
    var target = sockaddr_in()
    target.sin_family = sa_family_t(AF_INET)
    target.sin_port = proxy.port.bigEndian
    target.sin_addr.s_addr = inet_addr(address)
    let connected = withUnsafePointer(to: &target) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else { return [] }
    return exchangeRaw(connected: descriptor, Array(request.utf8))
}
