import Foundation
import TLSTestSupport
import Testing

/// `make install` and `make uninstall` into a DESTDIR, with the binaries the tests already built
/// (INSTALL_FROM), so no release build runs here.
@Suite("make install", .startsProcesses(timeLimit: .seconds(60)))
struct InstallTests {
    static func make(_ arguments: [String]) throws -> CommandResult {
        let make = try #require(ServiceFiles.tool("make"))
        let result = try runCommand(
            make, ["--no-print-directory", "-C", ServiceFiles.root, "INSTALL_FROM=\(ServiceFiles.binaries)"] + arguments)
        #expect(result.status == 0, "make \(arguments): \(result.standardOutput)\(result.standardError)")
        return result
    }

    /// Every file under `directory`, relative to it, with its permission bits.
    static func tree(_ directory: String) -> [String: Int] {
        var files: [String: Int] = [:]
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let relative = enumerator?.nextObject() as? String {
            let attributes = try? FileManager.default.attributesOfItem(atPath: directory + "/" + relative)
            guard attributes?[.type] as? FileAttributeType == .typeRegular else { continue }
            files["/" + relative] = (attributes?[.posixPermissions] as? Int) ?? 0
        }
        return files
    }

    /// What the shipped configuration contributes: atsproxy.conf only once it is in the tree.
    static var configuration: [String: Int] {
        var files = ["/etc/atsproxy/ats-defaults.plist": 0o644]
        if FileManager.default.fileExists(atPath: ServiceFiles.path("config/atsproxy.conf")) {
            files["/etc/atsproxy/atsproxy.conf"] = 0o644
        }
        return files
    }

    @Test("the default PREFIX: binaries, unit, sysusers.d, logrotate and configuration where systemd looks")
    func defaultPrefix() throws {
        let stage = try ServiceFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: stage) }
        _ = try Self.make(["install", "DESTDIR=\(stage)"])
        let expected = Self.configuration.merging([
            "/usr/local/bin/atsproxy": 0o755,
            "/usr/local/bin/atsproxyctl": 0o755,
            "/usr/local/lib/systemd/system/atsproxy.service": 0o644,
            "/usr/local/lib/sysusers.d/atsproxy.conf": 0o644,
            "/etc/logrotate.d/atsproxy": 0o644,
        ]) { $1 }
        #expect(Self.tree(stage) == expected)
        #expect(
            try String(contentsOfFile: stage + "/usr/local/lib/systemd/system/atsproxy.service", encoding: .utf8)
                == ServiceFiles.text("systemd/atsproxy.service"))
        #expect(FileManager.default.contentsEqual(atPath: stage + "/usr/local/bin/atsproxy", andPath: DaemonProcess.executable))

        _ = try Self.make(["uninstall", "DESTDIR=\(stage)"])
        #expect(Self.tree(stage) == Self.configuration, "uninstall leaves only the configuration")
    }

    @Test("another PREFIX is written into the unit and the logrotate snippet, and the unit goes to /etc")
    func otherPrefix() throws {
        let stage = try ServiceFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: stage) }
        _ = try Self.make(["install", "DESTDIR=\(stage)", "PREFIX=/opt/atsproxy"])
        let unit = try String(contentsOfFile: stage + "/etc/systemd/system/atsproxy.service", encoding: .utf8)
        #expect(unit.contains("\nExecStart=/opt/atsproxy/bin/atsproxy --config /etc/atsproxy/atsproxy.conf\n"))
        #expect(unit.contains("\nExecReload=/opt/atsproxy/bin/atsproxyctl reload --socket /run/atsproxy/control.sock\n"))
        #expect(!unit.contains("/usr/local/bin"))
        let logrotate = try String(contentsOfFile: stage + "/etc/logrotate.d/atsproxy", encoding: .utf8)
        #expect(logrotate.contains("/opt/atsproxy/bin/atsproxyctl reopen-logs"))
        #expect(FileManager.default.isExecutableFile(atPath: stage + "/opt/atsproxy/bin/atsproxyctl"))
        #expect(FileManager.default.fileExists(atPath: stage + "/etc/sysusers.d/atsproxy.conf"))
    }

    @Test("an edited configuration file is kept; the shipped one lands beside it as .new")
    func keepsConfiguration() throws {
        let stage = try ServiceFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: stage) }
        _ = try Self.make(["install", "DESTDIR=\(stage)"])
        let policy = stage + "/etc/atsproxy/ats-defaults.plist"
        try "<!-- mine -->\n".write(toFile: policy, atomically: true, encoding: .utf8)
        let again = try Self.make(["install", "DESTDIR=\(stage)"])
        #expect(try String(contentsOfFile: policy, encoding: .utf8) == "<!-- mine -->\n")
        #expect(FileManager.default.contentsEqual(atPath: policy + ".new", andPath: ServiceFiles.path("config/ats-defaults.plist")))
        #expect(again.standardOutput.contains("kept your \(policy)"), "\(again.standardOutput)")
        // An unedited file is simply replaced, with no .new.
        #expect(!FileManager.default.fileExists(atPath: stage + "/etc/atsproxy/atsproxy.conf.new"))
    }
}
