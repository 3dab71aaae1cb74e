import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// A log that cannot be written (a full disk: `/dev/full` fails every write with ENOSPC; a file at
/// the process's size limit, EFBIG part-way through a write): said on stderr once per burst, not
/// once per line; counted in `stats`, `status` and /metrics; the proxy goes on serving.
@Suite(.startsProcesses(timeLimit: .seconds(90)))
struct LogFailureProcessTests {
    @Test("three lines lost to a full disk: one stderr line, log_write_errors 3, and every client answered")
    func fullDisk() throws {
        let files = try ConfigFixture()
        let socket = "/tmp/atsproxy-test-\(UUID().uuidString.prefix(8)).sock"
        let config = try files.write(
            "atsproxy.conf",
            "listen = 127.0.0.1:0\nthreads = 1\nweb-listen = off\nlog-file = /dev/full\ncontrol-socket = \(socket)\n")
        let daemon = try DaemonProcess(
            directory: files.directory, ["--config", config],
            namedByConfig: (logFile: "/dev/full", controlSocket: socket))
        for index in 0..<3 {
            let blocked = try runCommand(
                "/usr/bin/curl",
                [
                    "-s", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", "http://127.0.0.1:\(daemon.port)",
                    "http://lost\(index).test/",
                ])
            #expect(blocked.standardOutput == "403")
        }
        let stats = try #require(
            jsonObject(atsproxyctl("stats", "--socket", daemon.controlSocket, "--json").standardOutput))
        #expect(stats["log_write_errors"] as? Int == 3, "\(stats)")
        let said = daemon.standardError.components(separatedBy: "cannot write the log /dev/full").count - 1
        #expect(said == 1, "\(daemon.standardError)")
        #expect(daemon.standardError.contains("No space left on device"))
        #expect(
            atsproxyctl("status", "--socket", daemon.controlSocket).standardOutput.contains(
                "3 lines could not be written"))
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "a log that reaches the file-size limit part-way through HTTP/2 stream lines: the daemon lives, each line is in the file whole or counted lost, and the next line starts whole"
    )
    func fileSizeLimit() throws {
        let host = "limit.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let documents = fixture.directory + "/www"
        try FileManager.default.createDirectory(atPath: documents, withIntermediateDirectories: true)
        try "under the limit\n".write(toFile: documents + "/index.html", atomically: true, encoding: .utf8)
        let server = try TestNghttpd(directory: fixture.directory, certificate: "leaf", documentRoot: documents)
        // SIGXFSZ as a shell or systemd leaves it (its default kills the process), whatever the test
        // runner's own disposition: an ignored signal stays ignored across exec. (The loops that
        // write the log block every signal, so this shows the daemon lives, not that the main
        // thread ignores SIGXFSZ.)
        let daemon = try fixture.daemon(wrapper: ["/usr/bin/env", "--default-signal=XFSZ"])
        let pid = daemon.process.processIdentifier
        var streams = 0
        // `count` GETs multiplexed (-Z) on one HTTP/2 connection: their lines end together, so the
        // relay writes them as one batch.
        func fetch(_ count: Int) throws {
            let urls = (0..<count).flatMap {
                ["https://\(host):\(server.port)/index.html?\(streams + $0)", "-o", "/dev/null"]
            }
            let curl = try fixture.curl(daemon, ["--http2", "-Z", "-w", "%{response_code}\\n"] + urls)
            #expect(curl.status == 0, "\(curl.standardError)")
            #expect(curl.standardOutput.split(separator: "\n") == Array(repeating: "200", count: count))
            streams += count
        }
        func stats() -> [String: Any] {
            jsonObject(atsproxyctl("stats", "--socket", daemon.controlSocket, "--json").standardOutput) ?? [:]
        }
        func accepted() -> Int { jsonValue(stats(), "connections", "total") as? Int ?? -1 }
        func errors() -> Int { stats()["log_write_errors"] as? Int ?? -1 }
        func logBytes() -> [UInt8] { Array(FileManager.default.contents(atPath: daemon.logPath) ?? Data()) }
        // The running daemon's soft RLIMIT_FSIZE, as `ulimit -f` or systemd's LimitFSIZE= would set it.
        func limitFileSize(_ value: String) throws {
            let prlimit = try runCommand("/usr/bin/prlimit", ["--pid", "\(pid)", "--fsize=\(value):"])
            #expect(prlimit.status == 0, "\(prlimit.standardError)")
        }

        try fetch(2)
        #expect(daemon.lines("connection", atLeast: 1).count == 1)
        // The limit falls 1,500 bytes past the end: about one request line fits, the rest of the
        // next batch does not. It holds for every file the daemon writes: its stderr must stay
        // under it for the failure to be said there.
        let before = logBytes().count
        let stderrBytes = (try? FileManager.default.attributesOfItem(atPath: daemon.stderrPath)[.size] as? Int) ?? 0
        try #require(stderrBytes + 1000 < before + 1500, "stderr is already \(stderrBytes) bytes, the log \(before)")
        try limitFileSize("\(before + 1500)")
        try fetch(6)
        // Every line made so far (one per stream, one per connection) is now in the file whole or
        // counted lost; the connection's line comes once curl has closed it.
        func accounted() -> (whole: Int, pieces: Int, lost: Int) {
            let lines = logBytes().split(separator: UInt8(ascii: "\n"))
            let whole = lines.filter { (try? JSONSerialization.jsonObject(with: Data($0))) != nil }.count
            return (whole, lines.count - whole, errors())
        }
        #expect(
            eventually(timeout: 10) {
                let now = accounted()
                return now.whole + now.lost == streams + accepted()
            }, "\(accounted()), \(streams) streams, \(accepted()) connections; \(daemon.standardError)")
        let limited = accounted()
        #expect(limited.lost >= 1 && limited.pieces <= 1, "\(limited)")
        #expect(logBytes().count <= before + 1500)
        #expect(daemon.standardError.contains("File too large"), "\(daemon.standardError)")
        #expect(!daemon.process.hasExited)

        // Room again: the next lines are whole, after the piece the failed write left, and the lost
        // lines are counted once on stderr.
        try limitFileSize("unlimited")
        try fetch(1)
        #expect(
            eventually(timeout: 10) {
                let now = accounted()
                return now.whole + now.lost == streams + accepted()
            }, "\(accounted()), \(streams) streams, \(accepted()) connections")
        let after = accounted()
        #expect(after.lost == limited.lost && after.pieces == limited.pieces, "\(after) after \(limited)")
        #expect(after.whole == limited.whole + 2)
        #expect(logBytes().last == UInt8(ascii: "\n"))
        let said = "is written again; \(limited.lost) line\(limited.lost == 1 ? " was" : "s were") lost"
        #expect(daemon.standardError.contains(said), "\(daemon.standardError)")
        #expect(daemon.terminate() == 0)
    }
}
