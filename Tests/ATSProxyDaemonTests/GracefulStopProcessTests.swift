import Foundation
import TLSTestSupport
import Testing

/// SIGTERM on the real `atsproxy` with a CONNECT tunnel open: the listeners close at once, the
/// tunnel is given `--shutdown-timeout` to finish, and is cut (and logged as such) after that.
@Suite("atsproxy stops gracefully", .startsProcesses(timeLimit: .seconds(60)))
struct GracefulStopProcessTests {
    /// A daemon whose policy lets cleartext through a tunnel to `app.test` (an exception allowing
    /// insecure HTTP loads), and the plain-HTTP origin behind that name.
    final class Setup {
        let factory: CertificateFactory
        let origin: TestHTTPOrigin
        let daemon: DaemonProcess

        init(shutdownTimeout: Int) throws {
            factory = try CertificateFactory()
            let hosts = try writeHostsFile(in: factory.directory, ["app.test"])
            let policy = PolicyFile(directory: factory.directory)
            try policy.write(ats: PolicyFile.insecureHTTP(for: "app.test"))
            origin = try TestHTTPOrigin(directory: factory.directory)
            daemon = try DaemonProcess(
                directory: factory.directory,
                [
                    "--listen", "127.0.0.1:0", "--policy", policy.path, "--hosts-file", hosts, "--system-roots", "off",
                    "--threads", "2", "--shutdown-timeout", "\(shutdownTimeout)",
                ])
        }

        /// A CONNECT tunnel to the origin through the proxy, past its `200`; nil if the proxy said otherwise.
        func openTunnel() -> Int32? {
            guard let descriptor = connectLoopback(port: daemon.port) else { return nil }
            sendAll(descriptor, "CONNECT app.test:\(origin.port) HTTP/1.1\r\nHost: app.test:\(origin.port)\r\n\r\n")
            let head = receive(descriptor, until: "\r\n\r\n")
            guard head.hasPrefix("HTTP/1.1 200") else {
                Issue.record("the proxy answered the CONNECT with: \(head)")
                close(descriptor)
                return nil
            }
            return descriptor
        }
    }

    /// `GET path` through an open tunnel; returns the request's size once the origin's answer came
    /// back, or nil when it did not within 15 seconds.
    static func exchange(_ tunnel: Int32, _ path: String) -> Int? {
        let request = "GET \(path) HTTP/1.1\r\nHost: app.test\r\n\r\n"
        sendAll(tunnel, request)
        let body = "hello from the origin, \(path)\n"
        let answer = receive(tunnel, until: body)
        guard answer.hasPrefix("HTTP/1.1 200"), answer.hasSuffix(body) else {
            Issue.record("through the tunnel, GET \(path) got: \(answer)")
            return nil
        }
        return request.utf8.count
    }

    @Test(
        "SIGTERM: new connections are refused, an open tunnel still carries bytes, and its end lets the daemon exit 0")
    func drainsOpenTunnel() throws {
        let setup = try Setup(shutdownTimeout: 120)
        let daemon = setup.daemon
        let tunnel = try #require(setup.openTunnel())
        var tunnelOpen = true
        defer { if tunnelOpen { close(tunnel) } }
        let first = try #require(Self.exchange(tunnel, "/before"))
        // A client that connected and said nothing: it has no request in progress, so it goes.
        let idle = try #require(connectLoopback(port: daemon.port))
        defer { close(idle) }

        kill(daemon.pid, SIGTERM)
        #expect(
            daemon.standardErrorLine(containing: "atsproxy stopping (signal \(SIGTERM))") != nil,
            "\(daemon.standardError)")
        let refused = eventually(timeout: 10) {
            guard let probe = connectLoopback(port: daemon.port) else { return true }
            close(probe)
            return false
        }
        #expect(refused, "port \(daemon.port) still accepts connections after SIGTERM")
        #expect(receiveAvailable(idle, wait: 10) == [], "the idle client was not let go")

        // The tunnel carries a whole request and answer after the stop began.
        let second = try #require(Self.exchange(tunnel, "/during"))
        #expect(!daemon.process.hasExited, "the daemon stopped with a tunnel open and 120 s to go")
        close(tunnel)
        tunnelOpen = false
        #expect(daemon.exitStatus(within: 30, "after the last tunnel closed") == 0)

        let record = try #require(daemon.logLines(atLeast: 1).first { $0["method"] as? String == "CONNECT" })
        #expect(record["action"] as? String == "allowed", "\(record)")
        #expect(record["tunnel"] as? String == "cleartext", "\(record)")
        #expect(record["upstream_error"] is NSNull, "\(record)")
        #expect(record["bytes_up"] as? Int == first + second, "\(record)")
        #expect(daemon.standardError.contains("atsproxy stopped"), "\(daemon.standardError)")
        #expect(!daemon.standardError.contains("shutdown timeout"), "\(daemon.standardError)")
    }

    @Test(
        "SIGTERM with --shutdown-timeout 1: an idle tunnel is cut, logged as cut by the shutdown, and the daemon exits 0"
    )
    func cutsTunnelAtTimeout() throws {
        let setup = try Setup(shutdownTimeout: 1)
        let daemon = setup.daemon
        let tunnel = try #require(setup.openTunnel())
        defer { close(tunnel) }
        #expect(Self.exchange(tunnel, "/held") != nil)

        let signalled = Date()
        kill(daemon.pid, SIGTERM)
        let status = daemon.exitStatus(within: 20, "after SIGTERM with --shutdown-timeout 1")
        let elapsed = Date().timeIntervalSince(signalled)
        #expect(status == 0)
        // A lower bound only: the tunnel was given its second before being cut.
        #expect(elapsed >= 0.9, "the daemon exited after \(elapsed) s, before the shutdown timeout")
        #expect(receiveAvailable(tunnel, wait: 5) == [], "the tunnel's client side was not closed")

        let record = try #require(daemon.logLines(atLeast: 1).first { $0["method"] as? String == "CONNECT" })
        let reason = record["upstream_error"] as? String ?? ""
        #expect(reason.contains("shutting down"), "\(record)")
        #expect(record["action"] as? String == "allowed", "\(record)")
        #expect(
            daemon.standardError.contains("shutdown timeout: closing 1 connection(s) still open"),
            "\(daemon.standardError)")
        #expect(daemon.standardError.contains("atsproxy stopped"), "\(daemon.standardError)")
    }
}

/// Sends all of `text` on a blocking socket.
func sendAll(_ descriptor: Int32, _ text: String) {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let sent = bytes[offset...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent > 0 else { return }
        offset += sent
    }
}

/// What arrives on `descriptor` until `text` is in it, the peer closes, or `timeout` seconds pass.
func receive(_ descriptor: Int32, until text: String, timeout: Double = 15) -> String {
    var received: [UInt8] = []
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        guard let chunk = receiveAvailable(descriptor, wait: 0.1) else { continue }
        if chunk.isEmpty { break }
        received += chunk
        if String(decoding: received, as: UTF8.self).contains(text) { break }
    }
    return String(decoding: received, as: UTF8.self)
}
