import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// A log that cannot be written (a full disk: `/dev/full` fails every write with ENOSPC): said on
/// stderr once per burst, not once per line; counted in `stats`, `status` and /metrics; the proxy
/// goes on serving.
@Suite(.startsProcesses(timeLimit: .seconds(60)))
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
}
