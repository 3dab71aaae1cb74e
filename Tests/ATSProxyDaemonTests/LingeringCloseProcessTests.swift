import Foundation
import Glibc
import TLSTestSupport
import Testing

/// The proxy's own error answers reach a client that is still sending: the daemon half-closes and
/// drops the rest instead of closing with bytes unread, which makes the kernel send a reset that
/// destroys the answer on its way (found by `make soak`: 2 of 300 oversize heads got ECONNRESET).
@Suite("atsproxy's lingering close", .startsProcesses(timeLimit: .seconds(60)))
struct LingeringCloseProcessTests {
    /// Sends `bytes` in one write, waits `pause` seconds (the answer and, without a lingering
    /// close, the reset arrive meanwhile), then reads to the end: the bytes read, and the errno
    /// that ended the read (0 for a clean end). The pause is the scenario, a client slow to read,
    /// and stays a sleep: no event says the reset has come, since with a lingering close it never
    /// does. A slow machine can only make it miss the bug, never fail a daemon that lingers.
    static func sendThenRead(port: UInt16, _ bytes: [UInt8], pause: Double) throws -> (answer: String, error: Int32) {
        let client = try #require(connectLoopback(port: port))
        defer { close(client) }
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { break }
            sent += count
        }
        Thread.sleep(forTimeInterval: pause)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(client, &chunk, chunk.count, 0)
            if count == 0 { return (String(decoding: answer, as: UTF8.self), 0) }
            if count < 0 { return (String(decoding: answer, as: UTF8.self), errno) }
            answer += chunk[..<count]
        }
    }

    @Test("a 200 KB head answered 431 while the rest is unread: the client reads the 431 and a clean end, not a reset")
    func oversizeHead() throws {
        let factory = try CertificateFactory()
        defer { withExtendedLifetime(factory) {} }
        let daemon = try DaemonProcess(directory: factory.directory, ["--listen", "127.0.0.1:0"])
        let head =
            Array("GET http://example.test/ HTTP/1.1\r\nX-Filler: ".utf8)
            + [UInt8](repeating: UInt8(ascii: "a"), count: 200_000)
        for _ in 0..<3 {
            let (answer, error) = try Self.sendThenRead(port: daemon.port, head, pause: 0.5)
            #expect(answer.hasPrefix("HTTP/1.1 431 "), "\(answer.prefix(80)) (errno \(error))")
            #expect(error == 0, "the read ended with errno \(error): \(String(cString: strerror(error)))")
        }
        let lines = daemon.logLines(atLeast: 3)
        #expect(lines.count == 3)
        #expect(lines.allSatisfy { $0["action"] as? String == "failed" })
        #expect(daemon.terminate() == 0)
    }

    @Test("a head cut at the head timeout gets its 408 and one log line, the client's last bytes unread")
    func timedOutHead() throws {
        let factory = try CertificateFactory()
        defer { withExtendedLifetime(factory) {} }
        let daemon = try DaemonProcess(
            directory: factory.directory, ["--listen", "127.0.0.1:0", "--head-timeout", "1"])
        let client = try #require(connectLoopback(port: daemon.port))
        defer { close(client) }
        let part = Array("GET http://example.test/ HTTP/1.1\r\n".utf8)
        _ = part.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        // Still trickling when the deadline passes: these bytes are unread when the 408 goes (the
        // scenario: a client trickling its head, so the pauses are sleeps).
        for _ in 0..<4 {
            Thread.sleep(forTimeInterval: 0.4)
            _ = Array("X: y\r\n".utf8).withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        let answer = receiveAvailable(client, wait: 5).map { String(decoding: $0, as: UTF8.self) } ?? ""
        #expect(answer.hasPrefix("HTTP/1.1 408 "), "\(answer)")
        let line = try #require(daemon.logLines(atLeast: 1).first)
        #expect(line["action"] as? String == "failed")
        #expect(
            (line["upstream_error"] as? String)?.hasPrefix("request timeout: no complete request head within 1")
                == true, "\(line)")
        #expect(daemon.terminate() == 0)
    }
}
