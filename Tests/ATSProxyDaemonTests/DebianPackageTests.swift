import Foundation
import TLSTestSupport
import Testing

/// `make deb`, then the package's whole life on this machine: installed with `dpkg -i`, installed
/// again, removed, purged. It needs root (dpkg on the real root: the postinst makes a system account
/// and runs as it, which a scratch root would not show) and changes the machine while it runs:
/// /usr/bin/atsproxy, /etc/atsproxy, /var/lib/atsproxy and the atsproxy account are this test's
/// alone, and it leaves them as it found them.
@Suite("the Debian package", .startsProcesses(timeLimit: .seconds(3600)))
struct DebianPackageTests {
    static let canInstall = geteuid() == 0 && ServiceFiles.tool("dpkg") != nil

    /// The package holds its own release build, not the sanitized binaries: make test-asan and
    /// make test-tsan (which set these) would only repeat what the plain run checked.
    static let sanitized = ["ASAN_OPTIONS", "TSAN_OPTIONS"].contains { ProcessInfo.processInfo.environment[$0] != nil }

    /// A command that must succeed, with its output in the failure: `tool` by path, or by name on PATH.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String], timeLimit: Double = 300) throws -> CommandResult {
        let executable = try #require(tool.hasPrefix("/") ? tool : ServiceFiles.tool(tool), "\(tool) is missing")
        let result = try runCommand(executable, arguments, timeLimit: timeLimit)
        #expect(
            result.status == 0,
            "\(tool) \(arguments.joined(separator: " ")): \(result.standardOutput)\(result.standardError)")
        return result
    }

    /// What dpkg knows of the package: "install ok installed", "deinstall ok config-files", or "" when
    /// it knows nothing of it.
    static func packageStatus() throws -> String {
        let dpkgQuery = try #require(ServiceFiles.tool("dpkg-query"))
        let result = try runCommand(dpkgQuery, ["-W", "-f=${Status}", "atsproxy"])
        return result.status == 0 ? result.standardOutput : ""
    }

    static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    /// The owner's uid and the permission bits of `path`.
    static func owner(_ path: String) -> (uid: uid_t, mode: mode_t)? {
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        return (status.st_uid, status.st_mode & 0o7777)
    }

    /// The CA's two files, to compare before and after.
    static func authority() -> [Data?] {
        ["ca.pem", "ca.key"].map { FileManager.default.contents(atPath: "/var/lib/atsproxy/ca/" + $0) }
    }

    @Test(
        "make deb is lintian-clean; it installs, keeps its CA on reinstall and removal, and purges to nothing",
        .enabled(if: canInstall, "needs root and dpkg: it installs the package on this machine (CI runs as root)"),
        .disabled(if: sanitized, "the package's binaries are a release build: the plain test run checks it"))
    func lifecycle() throws {
        // A run that failed half-way may have left the package behind: start from none.
        if try !Self.packageStatus().isEmpty { try Self.run("dpkg", ["--purge", "atsproxy"]) }
        for path in ["/etc/atsproxy", "/var/lib/atsproxy", "/var/log/atsproxy", "/usr/bin/atsproxy"] {
            // purge removes these: on a machine where make install put them, this test would take them.
            try #require(!Self.exists(path), "\(path) exists without the package: the purge would remove it")
        }
        // An account from make install stays through purge (postrm removes only one the package made).
        let accountBefore = getpwnam("atsproxy") != nil
        defer { _ = try? Self.run("dpkg", ["--purge", "atsproxy"]) }

        let output = try ServiceFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: output) }
        // From clean this is a release build (minutes): the limit is only against a hang.
        let make = try Self.run(
            "make", ["--no-print-directory", "-C", ServiceFiles.root, "deb", "DEB_DIR=\(output)"], timeLimit: 3000)
        #expect(make.standardOutput.contains("is lintian-clean"), "\(make.standardOutput)")
        let lintian = make.standardOutput.split(separator: "\n").filter { $0.hasPrefix("E: ") || $0.hasPrefix("W: ") }
        #expect(lintian.isEmpty, "\(lintian)")

        let version = try Self.run(ServiceFiles.binaries + "/atsproxyctl", ["--version"]).standardOutput
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let architecture = try Self.run("dpkg", ["--print-architecture"]).standardOutput
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let deb = output + "/atsproxy_\(version)_\(architecture).deb"
        try #require(
            FileManager.default.fileExists(atPath: deb),
            "\((try? FileManager.default.contentsOfDirectory(atPath: output)) ?? [])")
        let depends = try Self.run("dpkg-deb", ["--field", deb, "Depends"]).standardOutput
        for library in [
            "libc6", "libssl3", "libevent-core-2.1-7", "libnghttp2-14", "libqrencode4", "libpsl5", "zlib1g",
        ] {
            #expect(depends.contains(library), "Depends: \(depends)")
        }
        #expect(depends.contains("systemd | systemd-standalone-sysusers"), "Depends: \(depends)")
        // The Swift runtime is inside the binaries, not a dependency on the toolchain.
        #expect(!depends.lowercased().contains("swift"), "Depends: \(depends)")

        // Installed.
        try Self.run("dpkg", ["--install", deb])
        #expect(try Self.packageStatus() == "install ok installed")
        let files = try Self.run("dpkg", ["--listfiles", "atsproxy"]).standardOutput.split(separator: "\n")
            .map(String.init)
        for path in [
            "/usr/bin/atsproxy", "/usr/bin/atsproxyctl", "/usr/lib/systemd/system/atsproxy.service",
            "/usr/lib/sysusers.d/atsproxy.conf", "/usr/lib/tmpfiles.d/atsproxy.conf", "/etc/logrotate.d/atsproxy",
            "/etc/atsproxy/atsproxy.conf", "/etc/atsproxy/ats-defaults.plist", "/usr/share/man/man8/atsproxy.8.gz",
            "/usr/share/man/man1/atsproxyctl.1.gz", "/usr/share/man/man1/atsproxyctl-ca-init.1.gz",
            "/usr/share/bash-completion/completions/atsproxyctl", "/usr/share/zsh/vendor-completions/_atsproxyctl",
            "/usr/share/fish/vendor_completions.d/atsproxyctl.fish", "/usr/share/doc/atsproxy/copyright",
            "/usr/share/doc/atsproxy/changelog.gz",
        ] {
            #expect(files.contains(path) && Self.exists(path), "\(path) not installed: \(files)")
        }
        let unit = try String(contentsOfFile: "/usr/lib/systemd/system/atsproxy.service", encoding: .utf8)
        #expect(unit.contains("\nExecStart=/usr/bin/atsproxy --config /etc/atsproxy/atsproxy.conf\n"))
        let conffiles = try Self.run("dpkg-query", ["-W", "-f=${Conffiles}", "atsproxy"]).standardOutput
        for path in ["/etc/atsproxy/atsproxy.conf", "/etc/atsproxy/ats-defaults.plist", "/etc/logrotate.d/atsproxy"] {
            #expect(conffiles.contains(path), "\(conffiles)")
        }
        // Enabled the Debian way (deb-systemd-helper), even with no systemd running.
        #expect(Self.exists("/etc/systemd/system/multi-user.target.wants/atsproxy.service"))

        let account = try #require(getpwnam("atsproxy"), "postinst made no atsproxy user")
        let uid = account.pointee.pw_uid
        #expect(getgrnam("atsproxy") != nil, "postinst made no atsproxy group")
        #expect(Self.owner("/var/lib/atsproxy")?.uid == uid && Self.owner("/var/lib/atsproxy")?.mode == 0o750)
        #expect(Self.owner("/var/log/atsproxy")?.uid == uid && Self.owner("/var/log/atsproxy")?.mode == 0o750)
        #expect(Self.owner("/var/lib/atsproxy/ca")?.uid == uid && Self.owner("/var/lib/atsproxy/ca")?.mode == 0o700)
        #expect(Self.owner("/var/lib/atsproxy/ca/ca.key")?.uid == uid)
        #expect(Self.owner("/var/lib/atsproxy/ca/ca.key")?.mode == 0o600)
        #expect(Self.owner("/var/lib/atsproxy/ca/ca.pem")?.mode == 0o644)
        let authority = Self.authority()
        #expect(authority.allSatisfy { $0 != nil }, "postinst made no CA")

        // The installed binaries run: the Swift runtime they carry, the libraries Depends names.
        #expect(try Self.run("/usr/bin/atsproxyctl", ["--version"]).standardOutput == version + "\n")
        try Self.run("/usr/bin/atsproxyctl", ["ca", "show", "--dir", "/var/lib/atsproxy/ca"])
        try Self.run("/usr/bin/atsproxy", ["--check-config", "--config", "/etc/atsproxy/atsproxy.conf"])

        // Installed again (an upgrade runs the same scripts): the CA devices trust is kept.
        try Self.run("dpkg", ["--install", deb])
        #expect(Self.authority() == authority, "a reinstall replaced the CA")

        // Removed: the programs go; the configuration, the CA and the account stay.
        try Self.run("dpkg", ["--remove", "atsproxy"])
        #expect(try Self.packageStatus() == "deinstall ok config-files")
        #expect(!Self.exists("/usr/bin/atsproxy") && !Self.exists("/usr/lib/systemd/system/atsproxy.service"))
        #expect(Self.exists("/etc/atsproxy/atsproxy.conf") && Self.exists("/etc/logrotate.d/atsproxy"))
        #expect(Self.authority() == authority, "remove touched the CA")
        #expect(getpwnam("atsproxy") != nil)

        // Purged: nothing the package made is left.
        try Self.run("dpkg", ["--purge", "atsproxy"])
        #expect(try Self.packageStatus().isEmpty)
        let left = files.filter { Self.isFile($0) }
        #expect(left.isEmpty, "left after purge: \(left)")
        for path in [
            "/etc/atsproxy", "/var/lib/atsproxy", "/var/log/atsproxy",
            "/etc/systemd/system/multi-user.target.wants/atsproxy.service", "/etc/systemd/system/atsproxy.service",
        ] {
            #expect(!Self.exists(path), "\(path) is left after purge")
        }
        #expect((getpwnam("atsproxy") != nil) == accountBefore, "the atsproxy user is not as before")
        #expect((getgrnam("atsproxy") != nil) == accountBefore, "the atsproxy group is not as before")
    }

    /// Whether `path` is anything but a directory (the package's directories such as /usr/bin stay).
    static func isFile(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0 && status.st_mode & S_IFMT != S_IFDIR
    }
}
