import Foundation
import TLSTestSupport
import Testing

/// `make run`'s settings, read from what `make -n run` would run (nothing is built or started): each
/// variable becomes its atsproxy flag, and the commands it prints name the files the daemon uses.
@Suite("make run's settings", .startsProcesses(timeLimit: .seconds(60)))
struct MakeRunTests {
    /// The atsproxy command line `make run` would run with `variables`, as words, and all it prints.
    static func dryRun(_ variables: [String]) throws -> (daemon: [String], printed: String) {
        let make = try #require(ServiceFiles.tool("make"))
        let result = try runCommand(make, ["--no-print-directory", "-n", "-C", ServiceFiles.root, "run"] + variables)
        #expect(result.status == 0, "\(result.standardError)")
        let line = try #require(
            result.standardOutput.split(separator: "\n").last { $0.hasPrefix(".build/release/atsproxy ") })
        return (line.split(separator: " ").dropFirst().map(String.init), result.standardOutput)
    }

    static func value(of flag: String, in words: [String]) -> String? {
        words.firstIndex(of: flag).flatMap { $0 + 1 < words.count ? words[$0 + 1] : nil }
    }

    @Test("each variable is its flag; the report and status commands it prints name the daemon's own files")
    func variables() throws {
        let (words, printed) = try Self.dryRun([
            "CA_FILE=team-root.pem", "HOSTS_FILE=staging.hosts", "LOG_FILE=/tmp/run.jsonl",
            "WEB_LISTEN=127.0.0.1:9091", "CONTROL_SOCKET=/tmp/run.sock", "EXTRA=--mode report --block-style page",
            "LISTEN=127.0.0.1:9090",
        ])
        let expected = [
            "--ca-file": "team-root.pem", "--hosts-file": "staging.hosts", "--log-file": "/tmp/run.jsonl",
            "--web-listen": "127.0.0.1:9091", "--control-socket": "/tmp/run.sock", "--mode": "report",
            "--block-style": "page", "--listen": "127.0.0.1:9090",
        ]
        for (flag, value) in expected { #expect(Self.value(of: flag, in: words) == value, "\(flag) in \(words)") }
        #expect(printed.contains("atsproxyctl report /tmp/run.jsonl"))
        #expect(printed.contains("atsproxyctl status --socket /tmp/run.sock"))
    }

    @Test("by default: a log file report can read, and no --web-listen (a taken default port is skipped, not fatal)")
    func defaults() throws {
        let (words, printed) = try Self.dryRun([])
        #expect(Self.value(of: "--log-file", in: words) == ".build/atsproxy.log")
        #expect(printed.contains("atsproxyctl report .build/atsproxy.log"))
        #expect(!words.contains("--web-listen") && !words.contains("--ca-file") && !words.contains("--hosts-file"))
        #expect(Self.value(of: "--control-socket", in: words) == ".build/control.sock")
        // The older name of the control socket's variable still works.
        let older = try Self.dryRun(["RUN_CONTROL_SOCKET=/tmp/older.sock"]).daemon
        #expect(Self.value(of: "--control-socket", in: older) == "/tmp/older.sock")
    }
}
