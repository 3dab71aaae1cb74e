import Foundation
import TLSTestSupport
import Testing

/// systemd/atsproxy.service and systemd/atsproxy.sysusers, as systemd's own tools read them.
@Suite("the systemd unit", .startsProcesses(timeLimit: .seconds(60)))
struct SystemdUnitTests {
    /// `systemd-analyze verify` on a copy of the unit whose commands are the built binaries (verify
    /// insists that ExecStart= and ExecReload= programs exist; `--root` would need a whole unit
    /// tree). Returns the output lines about the unit: verify exits 0 even after warnings.
    static func verify(_ unit: String) throws -> (status: Int32, complaints: [String]) {
        let analyze = try #require(ServiceFiles.tool("systemd-analyze"))
        let directory = try ServiceFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/atsproxy.service"
        try unit.replacingOccurrences(of: "/usr/local/bin/", with: ServiceFiles.binaries + "/")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runCommand(analyze, ["verify", path])
        return (
            result.status, ServiceFiles.lines(of: result.standardOutput + result.standardError, mentioning: "atsproxy")
        )
    }

    @Test(
        "systemd-analyze verify has nothing to say about the unit",
        .enabled(
            if: ServiceFiles.tool("systemd-analyze") != nil,
            "systemd-analyze is not installed (Debian: apt-get install systemd)"))
    func verifyIsClean() throws {
        let (status, complaints) = try Self.verify(try ServiceFiles.text("systemd/atsproxy.service"))
        #expect(status == 0)
        #expect(complaints.isEmpty, "\(complaints.joined(separator: "\n"))")
    }

    @Test(
        "a mistake in the unit is caught, so a clean verify means something",
        .enabled(
            if: ServiceFiles.tool("systemd-analyze") != nil,
            "systemd-analyze is not installed (Debian: apt-get install systemd)"))
    func verifyCatchesMistakes() throws {
        let unit = try ServiceFiles.text("systemd/atsproxy.service")
            .replacingOccurrences(of: "ProtectSystem=strict", with: "ProtectSytem=strict")
        let (_, complaints) = try Self.verify(unit)
        #expect(complaints.contains { $0.contains("ProtectSytem") }, "\(complaints)")
    }

    @Test("the unit starts what make install puts in place, as the notify type the daemon speaks")
    func commands() throws {
        let lines = try ServiceFiles.text("systemd/atsproxy.service").split(separator: "\n").map(String.init)
        #expect(lines.contains("Type=notify"))
        #expect(lines.contains("ExecStart=/usr/local/bin/atsproxy --config /etc/atsproxy/atsproxy.conf"))
        #expect(lines.contains("ExecReload=/usr/local/bin/atsproxyctl reload --socket /run/atsproxy/control.sock"))
        #expect(lines.contains("RuntimeDirectory=atsproxy"))
        // Longer than the daemon's default --shutdown-timeout of 30 s, so a graceful stop can finish.
        let stop = try #require(lines.first { $0.hasPrefix("TimeoutStopSec=") })
        #expect((Int(stop.dropFirst("TimeoutStopSec=".count).dropLast()) ?? 0) > 30, "\(stop)")
    }

    @Test(
        "the sysusers.d entry makes the atsproxy user and group",
        .enabled(
            if: ServiceFiles.tool("systemd-sysusers") != nil,
            "systemd-sysusers is not installed (Debian: apt-get install systemd)"))
    func sysusers() throws {
        let directory = try ServiceFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/etc", withIntermediateDirectories: true)
        let result = try runCommand(
            try #require(ServiceFiles.tool("systemd-sysusers")),
            ["--dry-run", "--root=\(directory)", ServiceFiles.path("systemd/atsproxy.sysusers")])
        let output = result.standardOutput + result.standardError
        #expect(result.status == 0, "\(output)")
        #expect(output.contains("Creating group 'atsproxy'"), "\(output)")
        #expect(output.contains("Creating user 'atsproxy'"), "\(output)")
    }
}
