import Foundation
import Glibc
import TLSTestSupport
import Testing

/// A burst of connections that ends is followed by its memory going back to the system
/// (malloc_trim), counted in the metrics; a steady load is left alone.
@Suite("atsproxy returns a burst's memory", .startsProcesses(timeLimit: .seconds(90)))
struct MemoryTrimProcessTests {
    @Test(
        "300 connections, each with 12 KiB of a head buffered (under the 16 KiB limit), then closed: a trim within 15 s, and RSS reported"
    )
    func burstThenTrim() throws {
        // The factory's directory (removed with it) holds the daemon's files.
        let factory = try CertificateFactory()
        defer { withExtendedLifetime(factory) {} }
        let daemon = try DaemonProcess(directory: factory.directory, ["--listen", "127.0.0.1:0", "--threads", "2"])
        let partialHead =
            Array("GET http://example.test/ HTTP/1.1\r\nX-Filler: ".utf8)
            + [UInt8](repeating: UInt8(ascii: "a"), count: 12_288)
        var clients: [Int32] = []
        defer { for client in clients { close(client) } }
        for _ in 0..<300 {
            let client = try #require(connectLoopback(port: daemon.port))
            clients.append(client)
            _ = partialHead.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        let metrics = { try? PrometheusScrape(socket: daemon.controlSocket) }
        #expect(eventually { metrics()?.value("atsproxy_connections_open") == 300 }, "the burst never reached 300 open")
        // The scenario is a burst that lasts: held past one watch interval (5 s), so a look
        // happens while it is on. A sleep on purpose: the daemon's looks show nowhere outside it,
        // and a slow machine can only make the burst longer, never end it early.
        Thread.sleep(forTimeInterval: 6)
        #expect(metrics()?.value("atsproxy_memory_trims_total") == 0, "trimmed while the burst was on")
        for client in clients { close(client) }
        clients = []
        #expect(
            eventually(timeout: 20) { (metrics()?.value("atsproxy_memory_trims_total") ?? 0) >= 1 },
            "no trim after the burst")
        let scrape = try PrometheusScrape(socket: daemon.controlSocket)
        #expect((scrape.value("atsproxy_resident_memory_bytes") ?? 0) > 1_000_000, "\(scrape.text)")
        #expect(scrape.value("atsproxy_memory_trimmed_bytes_total") != nil)
    }

    @Test(
        "a burst shorter than the 5 s between looks (300 connections, closed once all are open) is still followed by a trim"
    )
    func shortBurst() throws {
        let factory = try CertificateFactory()
        defer { withExtendedLifetime(factory) {} }
        let daemon = try DaemonProcess(directory: factory.directory, ["--listen", "127.0.0.1:0", "--threads", "2"])
        var clients: [Int32] = []
        for _ in 0..<300 {
            let client = try #require(connectLoopback(port: daemon.port))
            clients.append(client)
            _ = Array("GET http://example.test/ HTTP/1.1\r\n".utf8).withUnsafeBytes {
                send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
        }
        // The burst ends as soon as the daemon holds all 300 (`stats`, answered in a few
        // milliseconds): well inside the 5 s between its looks.
        #expect(
            eventually(interval: 0.01) {
                jsonValue(daemonStats(daemon.controlSocket), "connections", "active") as? Int == 300
            }, "the burst never reached 300 open")
        for client in clients { close(client) }
        let metrics = { try? PrometheusScrape(socket: daemon.controlSocket) }
        #expect(
            eventually(timeout: 20) { (metrics()?.value("atsproxy_memory_trims_total") ?? 0) >= 1 },
            "no trim after the burst")
        #expect(metrics()?.value("atsproxy_connections_accepted_total") == 300)
    }
}
