import ATSProxyCtl
import Foundation
import POSIX
import TLSTestSupport
import Testing

/// The proxy's own pages under clients that push: pipelining without reading, half-closing,
/// trickling a head; and the web listener against DNS rebinding and requests relayed to it by the
/// proxy. Each of these once crashed the daemon, held its memory or let a page through.
@Suite(.startsProcesses(timeLimit: .seconds(180)))
struct SiteRobustnessProcessTests {
    /// Sends `count` pipelined `GET path` to `port` in one write (then half-closes when `halfClose`),
    /// waits `pause` seconds before reading, then reads to the end: how many responses came back.
    static func pipeline(port: UInt16, count: Int, path: String = "/status.json", halfClose: Bool, pause: Double = 0)
        throws -> Int
    {
        let script = """
            import socket, sys, time
            port, count, path, half, pause = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1", float(sys.argv[5])
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(("GET %s HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n" % path).encode() * count)
            if half: s.shutdown(socket.SHUT_WR)
            time.sleep(pause)  # The scenario: a client that reads nothing for a while.
            # A guard against a hang, not a measure: a sanitized daemon on a busy machine may pause
            # for a minute between answers (this once failed at 60 s under AddressSanitizer).
            s.settimeout(600)
            # Counted as the bytes come, keeping only a marker's length less one: counting the
            # whole answer so far after each read made the client slower as it read.
            marker, answered, tail = b"HTTP/1.1 200 OK", 0, b""
            try:
                while answered < count:
                    chunk = s.recv(1 << 16)
                    if not chunk: break
                    seen = tail + chunk
                    answered += seen.count(marker)
                    tail = seen[-(len(marker) - 1):]
            except OSError as error:  # A timeout or a reset: the count says how far it got.
                print("reading stopped: %r" % error, file=sys.stderr)
            print(answered)
            """
        let result = try runCommand(
            "/usr/bin/python3", ["-c", script, "\(port)", "\(count)", path, halfClose ? "1" : "0", "\(pause)"],
            // A guard against a hang, not a measure: a sanitized daemon on a busy machine is slow.
            timeLimit: 900)
        let answered = Int(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))
        guard let answered else {
            // What the client saw (the count once came back empty under AddressSanitizer on a
            // loaded machine, with nothing else to go on).
            Issue.record("the pipelining client (killed: \(result.killed)) said: \(result.standardError.suffix(2000))")
            return -1
        }
        if !result.standardError.isEmpty { print("pipelining client: \(result.standardError.suffix(500))") }
        return answered
    }

    @Test("5,000 pipelined page requests in one write: every one answered, in order, and the daemon lives")
    func pipelinedPages() throws {
        let fixture = try InterceptFixture(names: [])
        let daemon = try fixture.daemon(intercept: false)
        #expect(try Self.pipeline(port: daemon.port, count: 5000, halfClose: false) == 5000)
        #expect(try Self.pipeline(port: daemon.port, count: 1, halfClose: false) == 1)
        #expect(daemon.terminate() == 0)
    }

    @Test("a client that half-closes after its pipelined requests still gets every answer, on both listeners")
    func halfClosed() throws {
        let fixture = try InterceptFixture(names: [])
        let daemon = try fixture.daemon(intercept: false)
        #expect(try Self.pipeline(port: daemon.port, count: 500, halfClose: true) == 500)
        let web = try #require(daemon.webPort)
        // Answers beyond the 64 KiB backlog: the rest are read and answered as the client takes them.
        #expect(try Self.pipeline(port: web, count: 5000, path: "/api/state.json", halfClose: true) == 5000)
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "60,000 pipelined requests from a client that reads nothing for 2 s: the daemon's memory stays flat",
        arguments: [false, true])
    func unreadAnswersAreBounded(web: Bool) throws {
        // ThreadSanitizer slows the daemon some 5 to 10 times, and its shadow memory is in RSS:
        // there, 20,000 requests (still a backlog far past the 64 KiB bound) and no RSS check.
        let threadSanitizer = ProcessInfo.processInfo.environment["TSAN_OPTIONS"] != nil
        // The web listener's state answers cost more per request than the proxy's status page: under
        // ThreadSanitizer 5,000 of them are still a backlog far past the bound.
        // AddressSanitizer costs less, but 60,000 state answers took it past 6 minutes on a loaded
        // machine: 20,000 there, as far past the bound.
        let addressSanitizer = ProcessInfo.processInfo.environment["ASAN_OPTIONS"] != nil
        let count = threadSanitizer ? (web ? 5_000 : 20_000) : (addressSanitizer && web ? 20_000 : 60_000)
        let fixture = try InterceptFixture(names: [])
        let daemon = try fixture.daemon(intercept: false)
        let port = web ? try #require(daemon.webPort) : daemon.port
        let path = web ? "/api/state.json" : "/status.json"
        // The baseline once the listener has served a request, not after a guessed moment.
        #expect(try Self.pipeline(port: port, count: 1, path: path, halfClose: false) == 1)
        let pid = daemon.process.processIdentifier
        // The most RSS the daemon reaches while the client holds its answers unread and then reads
        // them: sampled every 100 ms until the client is done, whatever the machine's pace.
        let memory = PeakResidentMemory(pid: pid)
        let before = memory.start
        let answered = try Self.pipeline(port: port, count: count, path: path, halfClose: false, pause: 2)
        let during = memory.stop()
        #expect(answered == count)
        // AddressSanitizer's quarantine keeps freed memory from reuse: its RSS says nothing here.
        if ProcessInfo.processInfo.environment["ASAN_OPTIONS"] == nil, !threadSanitizer {
            #expect(during - before < 40 * 1024, "RSS grew from \(before) KiB to \(during) KiB")
        }
        #expect(daemon.terminate() == 0)
    }

    @Test("the web listener: a head trickled a byte a second is cut at the head timeout (408), not kept")
    func trickledHead() throws {
        let fixture = try InterceptFixture(names: [])
        let daemon = try fixture.daemon(intercept: false, ["--head-timeout", "2"])
        let web = try #require(daemon.webPort)
        let script = """
            import socket, sys, time
            s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
            start = time.monotonic()
            s.settimeout(10)
            answer = b""
            try:
                for byte in b"GET / HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nX-Slow: " + b"a" * 20:
                    s.sendall(bytes([byte]))
                    time.sleep(0.5)  # The scenario: a head trickled in, a byte every half second.
            except OSError:
                pass
            try:
                answer = s.recv(4096)
            except OSError:
                pass
            print("%.1f %s" % (time.monotonic() - start, answer.split(b"\\r\\n")[0].decode()))
            """
        let result = try runCommand("/usr/bin/python3", ["-c", script, "\(web)"], timeLimit: 40)
        let fields = result.standardOutput.split(separator: " ", maxSplits: 1)
        let seconds = Double(fields.first ?? "") ?? 99
        #expect(seconds < 6, "\(result.standardOutput)")
        #expect(result.standardOutput.contains("408"), "\(result.standardOutput)")
        #expect(daemon.terminate() == 0)
    }

    @Test("the web listener refuses a loopback client whose Host is another site's name (DNS rebinding)")
    func rebinding() throws {
        let fixture = try InterceptFixture(names: [])
        let daemon = try fixture.daemon(intercept: false)
        let web = try #require(daemon.webPort)
        func status(_ host: String, _ path: String = "/api/state.json") throws -> String {
            try runCommand(
                "/usr/bin/curl",
                [
                    "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Host: \(host)",
                    "http://127.0.0.1:\(web)\(path)",
                ]
            )
            .standardOutput
        }
        #expect(try status("rebind.attacker.example") == "403")
        #expect(try status("rebind.attacker.example", "/metrics") == "403")
        #expect(try status("127.0.0.1:\(web)") == "200")
        #expect(try status("localhost:\(web)") == "200")
        #expect(try status("[::1]:\(web)") == "200")
        #expect(daemon.terminate() == 0)
    }

    @Test("through the proxy, the web listener is refused like the proxy's own address (no token by the back door)")
    func webListenerThroughTheProxy() throws {
        let fixture = try InterceptFixture(names: [])
        let daemon = try fixture.daemon(intercept: false, ["--allow-destination", "127.0.0.0/8", "--mode", "report"])
        let web = try #require(daemon.webPort)
        let relayed = try runCommand(
            "/usr/bin/curl",
            [
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", "http://127.0.0.1:\(daemon.port)",
                "http://127.0.0.1:\(web)/metrics",
            ])
        #expect(relayed.standardOutput == "403")
        // http://atsproxy.test./ (an absolute name) is the onboarding host too.
        let dotted = try runCommand(
            "/usr/bin/curl",
            [
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", "http://127.0.0.1:\(daemon.port)",
                "http://atsproxy.test./",
            ])
        #expect(dotted.standardOutput == "200")
        #expect(daemon.terminate() == 0)
    }

    @Test("an event stream opens with the current state, not the next change")
    func eventStreamStartsWithState() throws {
        let fixture = try InterceptFixture(names: [])
        let daemon = try fixture.daemon(intercept: false)
        let web = try #require(daemon.webPort)
        let result = try runCommand(
            "/usr/bin/curl", ["-s", "--max-time", "2", "http://127.0.0.1:\(web)/events"], timeLimit: 10)
        #expect(result.standardOutput.contains("event: update\ndata: {"), "\(result.standardOutput.prefix(200))")
        #expect(daemon.terminate() == 0)
    }

    @Test("a dual-stack listener tells an IPv4 device its IPv4 address, in the PAC file and on the page")
    func dualStack() throws {
        let fixture = try InterceptFixture(names: [])
        let daemon = try DaemonProcess(directory: fixture.directory, ["--listen", "[::]:0", "--threads", "1"])
        let pac = try runCommand(
            "/usr/bin/curl", ["-sS", "--max-time", "10", "http://127.0.0.1:\(daemon.port)/proxy.pac"])
        #expect(pac.standardOutput.contains("PROXY 127.0.0.1:\(daemon.port)"), "\(pac.standardOutput.prefix(300))")
        #expect(!pac.standardOutput.contains("::ffff:"))
        #expect(daemon.terminate() == 0)
    }
}
