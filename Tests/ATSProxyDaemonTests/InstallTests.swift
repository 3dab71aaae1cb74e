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
            make,
            ["--no-print-directory", "-C", ServiceFiles.root, "INSTALL_FROM=\(ServiceFiles.binaries)"] + arguments)
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

    @Test("the default PREFIX: binaries, unit, sysusers.d, tmpfiles.d, logrotate and configuration where systemd looks")
    func defaultPrefix() throws {
        let stage = try ServiceFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: stage) }
        _ = try Self.make(["install", "DESTDIR=\(stage)"])
        let expected = Self.configuration.merging([
            "/usr/local/bin/atsproxy": 0o755,
            "/usr/local/bin/atsproxyctl": 0o755,
            "/usr/local/lib/systemd/system/atsproxy.service": 0o644,
            "/usr/local/lib/sysusers.d/atsproxy.conf": 0o644,
            "/usr/local/lib/tmpfiles.d/atsproxy.conf": 0o644,
            "/etc/logrotate.d/atsproxy": 0o644,
            "/usr/local/share/man/man8/atsproxy.8": 0o644,
            "/usr/local/share/man/man1/atsproxyctl.1": 0o644,
            "/usr/local/share/bash-completion/completions/atsproxy": 0o644,
            "/usr/local/share/bash-completion/completions/atsproxyctl": 0o644,
            "/usr/local/share/zsh/site-functions/_atsproxy": 0o644,
            "/usr/local/share/zsh/site-functions/_atsproxyctl": 0o644,
            "/usr/local/share/fish/vendor_completions.d/atsproxy.fish": 0o644,
            "/usr/local/share/fish/vendor_completions.d/atsproxyctl.fish": 0o644,
        ]) { $1 }
        // One page per atsproxyctl subcommand: which ones depends on the build, so they are counted apart.
        let installed = Self.tree(stage)
        let subcommandPages = installed.filter { $0.key.hasPrefix("/usr/local/share/man/man1/atsproxyctl-") }
        #expect(installed.filter { subcommandPages[$0.key] == nil } == expected)
        #expect(
            subcommandPages.keys.contains("/usr/local/share/man/man1/atsproxyctl-check.1"),
            "\(subcommandPages.keys.sorted())")
        #expect(
            subcommandPages.keys.contains("/usr/local/share/man/man1/atsproxyctl-ca-init.1"),
            "\(subcommandPages.keys.sorted())")
        #expect(subcommandPages.values.allSatisfy { $0 == 0o644 })
        #expect(
            try String(contentsOfFile: stage + "/usr/local/lib/systemd/system/atsproxy.service", encoding: .utf8)
                == ServiceFiles.text("systemd/atsproxy.service"))
        #expect(
            FileManager.default.contentsEqual(
                atPath: stage + "/usr/local/bin/atsproxy", andPath: DaemonProcess.executable))

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
        #expect(
            unit.contains("\nExecReload=/opt/atsproxy/bin/atsproxyctl reload --socket /run/atsproxy/control.sock\n"))
        #expect(!unit.contains("/usr/local/bin"))
        let logrotate = try String(contentsOfFile: stage + "/etc/logrotate.d/atsproxy", encoding: .utf8)
        #expect(logrotate.contains("/opt/atsproxy/bin/atsproxyctl reopen-logs"))
        #expect(FileManager.default.isExecutableFile(atPath: stage + "/opt/atsproxy/bin/atsproxyctl"))
        #expect(FileManager.default.fileExists(atPath: stage + "/etc/sysusers.d/atsproxy.conf"))
        #expect(FileManager.default.fileExists(atPath: stage + "/etc/tmpfiles.d/atsproxy.conf"))
    }

    /// A tool the checks below need, with the Debian package that has it (APT_PACKAGES in the Makefile).
    static func required(_ name: String, package: String) throws -> String {
        try #require(ServiceFiles.tool(name), "\(name) is missing: apt-get install \(package)")
    }

    @Test("the manual pages render without a warning, and each shell parses its completions")
    func manualsAndCompletions() throws {
        let stage = try ServiceFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: stage) }
        _ = try Self.make(["install", "DESTDIR=\(stage)", "PREFIX=/usr"])
        let man = stage + "/usr/share/man"
        let pages =
            ["man8/atsproxy.8"]
            + (try FileManager.default.contentsOfDirectory(atPath: man + "/man1")).sorted().map { "man1/" + $0 }
        #expect(pages.count > 5, "\(pages)")

        let groff = try Self.required("groff", package: "groff-base")
        let mandoc = try Self.required("mandoc", package: "mandoc")
        for page in pages {
            // groff is what man(1) runs: -ww turns on every warning, and none may come.
            let rendered = try runCommand(groff, ["-mandoc", "-Tutf8", "-ww", "-P-cbou", man + "/" + page])
            #expect(rendered.status == 0 && rendered.standardError.isEmpty, "\(page): \(rendered.standardError)")
            #expect(
                rendered.standardOutput.contains("NAME") && rendered.standardOutput.contains("DESCRIPTION"), "\(page)")
            // mandoc's linter knows mdoc's rules: a misused macro is a warning there.
            let lint = try runCommand(mandoc, ["-T", "lint", "-W", "warning", man + "/" + page])
            #expect(
                lint.status == 0 && lint.standardOutput.isEmpty, "\(page): \(lint.standardOutput)\(lint.standardError)")
        }
        let daemon = try runCommand(groff, ["-mandoc", "-Tutf8", "-P-cbou", man + "/man8/atsproxy.8"]).standardOutput
        for text in ["ATSPROXY(8)", "--listen", "--policy", "--check-config", "SIGHUP", "/etc/atsproxy/atsproxy.conf"] {
            #expect(daemon.contains(text), "atsproxy.8 lacks \(text)")
        }
        let ctl = try runCommand(groff, ["-mandoc", "-Tutf8", "-P-cbou", man + "/man1/atsproxyctl.1"]).standardOutput
        for text in ["ATSPROXYCTL(1)", "check", "report", "atsproxyctl-check(1)", "atsproxy(8)"] {
            #expect(ctl.contains(text), "atsproxyctl.1 lacks \(text)")
        }
        let check = try runCommand(groff, ["-mandoc", "-Tutf8", "-P-cbou", man + "/man1/atsproxyctl-check.1"])
            .standardOutput
        #expect(check.contains("--strict") && check.contains("--json"), "\(check)")

        let bash = try Self.required("bash", package: "bash")
        let zsh = try Self.required("zsh", package: "zsh")
        let fish = try Self.required("fish", package: "fish")
        for tool in ["atsproxy", "atsproxyctl"] {
            let bashFile = stage + "/usr/share/bash-completion/completions/" + tool
            let zshFile = stage + "/usr/share/zsh/site-functions/_" + tool
            let fishFile = stage + "/usr/share/fish/vendor_completions.d/" + tool + ".fish"
            for (shell, file) in [(bash, bashFile), (zsh, zshFile), (fish, fishFile)] {
                let parsed = try runCommand(shell, ["-n", file])
                #expect(
                    parsed.status == 0 && parsed.standardError.isEmpty, "\(shell) -n \(file): \(parsed.standardError)")
            }
            // Sourced, the bash script registers a completion for the command.
            let registered = try runCommand(bash, ["-c", "source \(bashFile) && complete -p \(tool)"])
            #expect(registered.status == 0 && registered.standardOutput.contains(tool), "\(registered.standardError)")
        }
        let fishCompletion = try String(
            contentsOfFile: stage + "/usr/share/fish/vendor_completions.d/atsproxyctl.fish", encoding: .utf8)
        #expect(fishCompletion.contains("report") && fishCompletion.contains("diagnose"))

        _ = try Self.make(["uninstall", "DESTDIR=\(stage)", "PREFIX=/usr"])
        #expect(!FileManager.default.fileExists(atPath: man + "/man8/atsproxy.8"))
        #expect(
            Self.tree(stage).keys.filter { $0.hasPrefix("/usr/share/") }.isEmpty, "\(Self.tree(stage).keys.sorted())")
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
        #expect(
            FileManager.default.contentsEqual(
                atPath: policy + ".new", andPath: ServiceFiles.path("config/ats-defaults.plist")))
        #expect(again.standardOutput.contains("kept your \(policy)"), "\(again.standardOutput)")
        // An unedited file is simply replaced, with no .new.
        #expect(!FileManager.default.fileExists(atPath: stage + "/etc/atsproxy/atsproxy.conf.new"))
    }
}
