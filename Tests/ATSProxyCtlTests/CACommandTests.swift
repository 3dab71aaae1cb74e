import Foundation
import TLSTestSupport
import Testing

@testable import ATSProxyCtl

/// `atsproxyctl ca init|export|show`, run in-process, checked with the real openssl and plistlib.
@Suite("atsproxyctl ca", .startsProcesses(timeLimit: .seconds(120)))
struct CACommandTests {
    @Test("init creates the CA files with their modes and prints the fingerprint and the two iOS steps")
    func initCreates() throws {
        let scratch = try ScratchDirectory()
        let directory = scratch.path + "/ca"
        let result = ctl("ca", "init", "--dir", directory)
        #expect(result.exitCode == 0, "\(result.standardError)")
        #expect(result.standardOutput.hasPrefix("Created CN=atsproxy CA ("))
        #expect(result.standardOutput.contains("Certificate Trust Settings"))
        let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/ca.key")
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let fingerprint = try runCommand(
            "/usr/bin/openssl", ["x509", "-in", directory + "/ca.pem", "-noout", "-fingerprint", "-sha256"])
        let value = try #require(fingerprint.standardOutput.split(separator: "=").last).trimmingCharacters(
            in: .newlines)
        #expect(result.standardOutput.contains("SHA-256      \(value)\n"))

        let again = ctl("ca", "init", "--dir", directory)
        #expect(again.exitCode == 2)
        #expect(again.standardError.contains(directory + "/ca.pem: a CA already exists"), "\(again.standardError)")
        #expect(ctl("ca", "init", "--dir", directory, "--force", "--key-type", "rsa").exitCode == 0)
        let text = try runCommand("/usr/bin/openssl", ["x509", "-in", directory + "/ca.pem", "-noout", "-text"])
            .standardOutput
        #expect(text.contains("Public-Key: (2048 bit)"))
        #expect(!text.contains(value.replacingOccurrences(of: ":", with: "")))
    }

    @Test("export writes PEM, raw DER and a mobileconfig that openssl and plistlib read back")
    func export() throws {
        let scratch = try ScratchDirectory()
        let directory = scratch.path + "/ca"
        #expect(ctl("ca", "init", "--dir", directory).exitCode == 0)
        let pem = ctl("ca", "export", "--dir", directory, "--format", "pem")
        #expect(pem.exitCode == 0)
        #expect(pem.standardOutput == (try String(contentsOfFile: directory + "/ca.pem", encoding: .utf8)))

        let der = ctl("ca", "export", "--dir", directory, "--format", "der")
        #expect(der.exitCode == 0)
        let expected = try runCommand("/usr/bin/openssl", ["x509", "-in", directory + "/ca.pem", "-outform", "der"])
        #expect(Data(der.standardOutputBytes) == expected.standardOutputBytes, "the DER bytes, unchanged")
        #expect(der.standardOutputBytes.first == 0x30)

        let profile = ctl("ca", "export", "--dir", directory, "--format", "mobileconfig")
        #expect(profile.exitCode == 0)
        #expect(
            profile.standardOutputBytes
                == ctl("ca", "export", "--dir", directory, "--format", "mobileconfig").standardOutputBytes)
        let script = """
            import plistlib, sys, base64
            p = plistlib.load(sys.stdin.buffer)
            r = p["PayloadContent"][0]
            print(p["PayloadType"], r["PayloadType"], base64.b64encode(r["PayloadContent"]).decode())
            """
        let parsed = try runCommand("/usr/bin/python3", ["-c", script], input: Data(profile.standardOutputBytes))
        #expect(parsed.status == 0, "\(parsed.standardError)")
        #expect(
            parsed.standardOutput
                == "Configuration com.apple.security.root \(expected.standardOutputBytes.base64EncodedString())\n")
    }

    @Test("show prints subject, key, both fingerprints, validity, files and the iOS steps")
    func show() throws {
        let scratch = try ScratchDirectory()
        let directory = scratch.path + "/ca"
        #expect(ctl("ca", "init", "--dir", directory).exitCode == 0)
        let result = ctl("ca", "show", "--dir", directory)
        #expect(result.exitCode == 0, "\(result.standardError)")
        let text = result.standardOutput
        for prefix in [
            "Subject      CN=atsproxy CA (", "Key          EC 256-bit", "SHA-256      ", "SHA-1        ",
            "Valid        ",
            "Certificate  \(directory)/ca.pem", "Private key  \(directory)/ca.key",
            "  2. Turn on full trust: Settings → General → About → Certificate Trust Settings → atsproxy CA (",
        ] {
            #expect(text.contains("\n" + prefix) || text.hasPrefix(prefix), "\(prefix) missing in \(text)")
        }
        let sha1 = try runCommand(
            "/usr/bin/openssl", ["x509", "-in", directory + "/ca.pem", "-noout", "-fingerprint", "-sha1"])
        #expect(text.contains("SHA-1        " + (sha1.standardOutput.split(separator: "=").last ?? "")))
    }

    @Test("the export command init and show print works as printed: with the CA's directory when it is not the default")
    func printedExportWorks() throws {
        let scratch = try ScratchDirectory()
        let directory = scratch.path + "/my ca"
        let created = ctl("ca", "init", "--dir", directory)
        #expect(created.exitCode == 0, "\(created.standardError)")
        for text in [created.standardOutput, ctl("ca", "show", "--dir", directory).standardOutput] {
            let line = try #require(text.split(separator: "\n").first { $0.contains(" ca export") })
            #expect(line.contains("atsproxyctl ca export --dir '\(directory)' --format mobileconfig"), "\(line)")
            #expect(text.contains("add-root-cert '\(directory)/ca.pem'"))
            // The printed command, run as printed (the shell's words), writes the profile.
            let command = try #require(line.split(separator: ":", maxSplits: 1).last)
                .split(separator: ">").first!.replacingOccurrences(of: "atsproxyctl ", with: "")
            let words = try runCommand("/bin/sh", ["-c", "for w in \(command); do printf '%s\\n' \"$w\"; done"])
                .standardOutput.split(separator: "\n").map(String.init)
            let exported = ATSProxyCtl.run(words)
            #expect(exported.exitCode == 0 && exported.standardOutput.contains("<plist"), "\(words)")
        }
        #expect(
            CATrustSteps.lines(commonName: "x", directory: CADirectoryOption.defaultPath).contains {
                $0.contains("atsproxyctl ca export --format mobileconfig")
            })
    }

    /// A bad CA directory: what `show` and `export` must name.
    struct Bad: Sendable, CustomTestStringConvertible {
        var name: String
        var file: String
        var words: String
        var spoil: @Sendable (String) throws -> Void
        var testDescription: String { name }
    }

    static let bad: [Bad] = [
        Bad(name: "no CA at all", file: "ca.key", words: "no such file") { directory in
            try FileManager.default.removeItem(atPath: directory)
        },
        Bad(
            name: "ca.key 0644", file: "ca.key",
            words: "refusing ca.key readable by group or others (mode 0644): chmod 600"
        ) { directory in
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: directory + "/ca.key")
        },
        Bad(name: "ca.pem not PEM", file: "ca.pem", words: "not PEM") { directory in
            try Data("nothing".utf8).write(to: URL(fileURLWithPath: directory + "/ca.pem"))
        },
    ]

    @Test("show and export refuse a bad CA with exit 2, naming the file", arguments: bad, ["show", "export"])
    func refuses(_ row: Bad, command: String) throws {
        let scratch = try ScratchDirectory()
        let directory = scratch.path + "/ca"
        #expect(ctl("ca", "init", "--dir", directory).exitCode == 0)
        try row.spoil(directory)
        let arguments = ["ca", command, "--dir", directory] + (command == "export" ? ["--format", "pem"] : [])
        let result = ATSProxyCtl.run(arguments)
        #expect(result.exitCode == 2)
        #expect(result.standardOutput.isEmpty)
        #expect(
            result.standardError.hasPrefix("atsproxyctl: error: \(directory)/\(row.file): "), "\(result.standardError)")
        #expect(result.standardError.contains(row.words), "\(result.standardError)")
    }

    @Test(
        "bad options are usage errors: exit 2",
        arguments: [
            ["ca", "export", "--dir", "/tmp"], ["ca", "export", "--format", "p12"],
            ["ca", "init", "--key-type", "dsa"], ["ca", "frob"],
        ])
    func badOptions(_ arguments: [String]) {
        let result = ATSProxyCtl.run(arguments)
        #expect(result.exitCode == 2, "\(arguments): \(result.standardOutput)")
        #expect(!result.standardError.isEmpty)
    }

    @Test("each ca subcommand has its own help with examples", arguments: ["init", "export", "show"])
    func help(_ subcommand: String) {
        for arguments in [["ca", subcommand, "--help"], ["help", "ca", subcommand]] {
            let result = ATSProxyCtl.run(arguments)
            #expect(result.exitCode == 0, "\(arguments)")
            #expect(
                result.standardOutput.contains("USAGE: atsproxyctl ca \(subcommand)"),
                "\(arguments): \(result.standardOutput)")
            #expect(result.standardOutput.contains("Examples:\n  atsproxyctl ca \(subcommand)"), "\(arguments)")
        }
    }
}
