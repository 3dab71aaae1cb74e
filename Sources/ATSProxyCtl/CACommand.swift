import ArgumentParser
import Foundation
import TLSInspection

/// `atsproxyctl ca init|export|show`: the CA intercept mode signs its leaves with, and what a
/// device needs to trust it.
struct CACommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ca",
        abstract: "Create, export and show the CA that intercept mode signs its certificates with.",
        discussion: """
            The CA lives in one directory: ca.pem (the certificate, 0644) and ca.key (its private key, \
            0600; refused when group or others can read it). The daemon's default is \(CADirectoryOption.defaultPath).

            A device trusts it in two steps: install the certificate (the mobileconfig profile), then turn \
            on full trust in Settings → General → About → Certificate Trust Settings.

            Exit status: 0 done; 2 a missing, unreadable or invalid CA file, an existing CA without --force, \
            or a bad option.

            Examples:
              atsproxyctl ca init
              atsproxyctl ca export --format mobileconfig > atsproxy-ca.mobileconfig
              atsproxyctl ca show --dir ./ca
            """,
        subcommands: [CAInitCommand.self, CAExportCommand.self, CAShowCommand.self])
}

/// The CA directory option every `ca` subcommand takes.
struct CADirectoryOption: ParsableArguments {
    @Option(name: .customLong("dir"), help: "The CA's directory (ca.pem and ca.key).")
    var directory = CADirectoryOption.defaultPath

    /// The daemon's, under systemd (StateDirectory=atsproxy).
    static let defaultPath = CertificateAuthority.defaultDirectory

    /// The CA, checked; or exit 2 after saying which file is wrong.
    func load(_ output: Output) -> CertificateAuthority? {
        do {
            return try CertificateAuthority.load(from: directory)
        } catch {
            output.error("atsproxyctl: error: \(error)")
            return nil
        }
    }
}

/// The two steps a device needs, as `init` and `show` print them: commands that work as printed,
/// with the CA's directory when it is not the default and atsproxyctl as it was run when that was
/// by path (`make run` runs `.build/release/atsproxyctl`, which is not on PATH).
enum CATrustSteps {
    static func lines(commonName: String, directory: String) -> [String] {
        let dir = directory == CADirectoryOption.defaultPath ? "" : " --dir \(shellQuoted(directory))"
        let certificate = shellQuoted(directory + "/" + CertificateAuthority.certificateFileName)
        return [
            "To trust it on an iPhone or iPad:",
            "  1. Install the profile: \(program) ca export\(dir) --format mobileconfig > atsproxy-ca.mobileconfig,",
            "     open it on the device (AirDrop, mail or a web page), then Settings → General → VPN & Device",
            "     Management → Install.",
            "  2. Turn on full trust: Settings → General → About → Certificate Trust Settings → \(commonName).",
            "     Since iOS 10.3 this is a separate step: installing the profile alone does not make apps trust it.",
            "  Simulator: drag \(certificate) onto the simulator window, or",
            "     xcrun simctl keychain booted add-root-cert \(certificate).",
        ]
    }

    /// atsproxyctl as it was run when that was by a path to it; its name otherwise.
    static var program: String {
        let invoked = CommandLine.arguments.first ?? ""
        guard invoked.contains("/"), invoked.split(separator: "/").last == "atsproxyctl" else { return "atsproxyctl" }
        return shellQuoted(invoked)
    }

    /// `text` as one shell word: as it is when it needs no quoting, else in single quotes.
    static func shellQuoted(_ text: String) -> String {
        let plain = text.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "/._-+:,@%=".utf8.contains(byte)
        }
        return plain && !text.isEmpty ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

/// `atsproxyctl ca init [--dir DIR] [--key-type ecdsa|rsa] [--force]`
struct CAInitCommand: ParsableCommand, OutputCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create the CA: a new key and a 10-year root certificate.",
        discussion: """
            Writes ca.key (PKCS #8, created 0600) and ca.pem (0644) in DIR, creating DIR (0700) if needed. \
            The certificate's CN is "atsproxy CA (HOSTNAME)", the name a device lists it under. An existing \
            CA is kept unless --force: devices that trust it must then be given the new one.

            Exit status: 0 created; 2 a CA is already there (without --force), or DIR cannot be written.

            Examples:
              atsproxyctl ca init
              atsproxyctl ca init --dir ./ca --key-type rsa --force
            """)

    enum KeyType: String, ExpressibleByArgument, CaseIterable {
        case ecdsa, rsa
        var kind: PrivateKey.Kind { self == .ecdsa ? .ecdsaP256 : .rsa2048 }
    }

    @OptionGroup var location: CADirectoryOption

    @Option(help: "The CA key: ecdsa (P-256) or rsa (2048 bits).")
    var keyType: KeyType = .ecdsa

    @Flag(help: "Replace an existing CA in DIR.")
    var force = false

    func execute(_ output: Output) -> Int32 {
        let authority: CertificateAuthority
        do {
            authority = try CertificateAuthority.create(in: location.directory, keyType: keyType.kind, force: force)
        } catch {
            output.error("atsproxyctl: error: \(error)")
            return ExitStatus.badInput
        }
        output.line("Created \(authority.subject)")
        output.line("  certificate  \(authority.certificatePath)")
        output.line("  private key  \(authority.keyPath)")
        output.line("  SHA-256      \(authority.sha256Fingerprint)")
        output.line()
        for line in CATrustSteps.lines(
            commonName: authority.certificate.commonName ?? authority.subject, directory: location.directory)
        {
            output.line(line)
        }
        return ExitStatus.success
    }
}

/// `atsproxyctl ca export [--dir DIR] --format pem|der|mobileconfig`
struct CAExportCommand: ParsableCommand, OutputCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write the CA certificate to standard output: PEM, DER or an iOS profile.",
        discussion: """
            pem is ca.pem; der is the binary .cer many devices open; mobileconfig is an unsigned iOS \
            configuration profile with one root-certificate payload (the same bytes on every export, so \
            reinstalling it is harmless). The private key is never exported.

            Exit status: 0 written; 2 the CA is missing, unreadable or invalid.

            Examples:
              atsproxyctl ca export --format mobileconfig > atsproxy-ca.mobileconfig
              atsproxyctl ca export --dir ./ca --format der > atsproxy-ca.cer
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case pem, der, mobileconfig
    }

    @OptionGroup var location: CADirectoryOption

    @Option(help: "pem, der or mobileconfig.")
    var format: Format

    func execute(_ output: Output) -> Int32 {
        guard let authority = location.load(output) else { return ExitStatus.badInput }
        switch format {
        case .pem:
            do {
                output.write(bytes: try authority.pem)
            } catch {
                output.error("atsproxyctl: error: \(authority.certificatePath): \(error)")
                return ExitStatus.badInput
            }
        case .der: output.write(bytes: authority.der)
        case .mobileconfig: output.write(bytes: authority.mobileConfig())
        }
        return ExitStatus.success
    }
}

/// `atsproxyctl ca show [--dir DIR]`
struct CAShowCommand: ParsableCommand, OutputCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show the CA: subject, key, fingerprints, validity, files, and how a device trusts it.",
        discussion: """
            Compare the SHA-256 fingerprint with the one iOS shows under Settings → General → VPN & Device \
            Management → the profile → More Details before trusting it.

            Exit status: 0 shown; 2 the CA is missing, unreadable or invalid.

            Examples:
              atsproxyctl ca show
              atsproxyctl ca show --dir ./ca
            """)

    @OptionGroup var location: CADirectoryOption

    func execute(_ output: Output) -> Int32 {
        guard let authority = location.load(output) else { return ExitStatus.badInput }
        output.line("Subject      \(authority.subject)")
        output.line("Key          \(authority.certificate.keySummary)")
        output.line("SHA-256      \(authority.sha256Fingerprint)")
        output.line("SHA-1        \(authority.sha1Fingerprint)")
        output.line("Valid        \(Self.date(authority.notBefore)) to \(Self.date(authority.notAfter))")
        output.line("Certificate  \(authority.certificatePath)")
        output.line("Private key  \(authority.keyPath)")
        output.line()
        for line in CATrustSteps.lines(
            commonName: authority.certificate.commonName ?? authority.subject, directory: location.directory)
        {
            output.line(line)
        }
        return ExitStatus.success
    }

    /// "2026-11-24 15:00:00 UTC"
    static func date(_ seconds: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss 'UTC'"
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}
