import ArgumentParser
import ATSPolicy
import ATSPolicyArguments

/// `atsproxyctl explain --policy POLICY HOST...`: the effective requirements for each host, and why.
struct ExplainCommand: ParsableCommand, OutputCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Show the effective ATS requirements for hosts under a policy, and which rule decided.",
        discussion: """
            HOST is a host name, an IP address (IPv6 with or without brackets), host:port, or a URL; a URL's \
            scheme is used unless --scheme is given.

            Exit status: 0 every host was explained; 2 the policy could not be loaded or a host is malformed \
            (the other hosts are still explained).
            """)

    @Option(help: "The policy file (Info.plist or NSAppTransportSecurity dictionary, XML or binary).")
    var policy: String

    @Option(help: "The URL scheme of the load: https or http.")
    var scheme: URLScheme?

    @Option(name: .customLong("client"), help: "Which API opens the connection: urlsession, webkit or media.")
    var clientClass: ClientClass = .urlsession

    @Flag(help: "Print one JSON object per host per line.")
    var json = false

    @OptionGroup var options: PolicyOptions

    @Argument(help: "The hosts (or URLs) to explain.")
    var hosts: [String]

    func validate() throws {
        guard !hosts.isEmpty else { throw ValidationError("name at least one HOST to explain") }
    }

    func execute(_ output: Output) -> Int32 {
        let loaded: PolicyLoader.Loaded
        do {
            loaded = try PolicyLoader.load(path: policy, settings: options.settings(clientClass: clientClass))
        } catch {
            output.error("atsproxyctl: error: \(error)")
            return ExitStatus.badInput
        }
        let problems = loaded.policy.findings.filter { $0.severity != .info }.count
        if problems > 0 {
            output.error(
                "atsproxyctl: note: \(loaded.path) has \(problems) finding\(problems == 1 ? "" : "s"); "
                    + "run 'atsproxyctl check \(loaded.path)' to see them")
        }
        var status = ExitStatus.success
        for (index, argument) in hosts.enumerated() {
            let target: HostArgument
            do {
                target = try HostArgument(parsing: argument, scheme: scheme)
            } catch {
                output.error("atsproxyctl: error: host \"\(argument)\": \(error.message)")
                status = ExitStatus.badInput
                continue
            }
            let requirements = loaded.policy.requirements(for: target.host, scheme: target.scheme, clientClass: clientClass)
            if json {
                output.line(requirements.json.serialized)
            } else {
                if index > 0 { output.line("") }
                printRequirements(requirements, to: output)
            }
        }
        return status
    }

    private func printRequirements(_ requirements: Requirements, to output: Output) {
        let rule = requirements.rule
        output.line("\(requirements.scheme.rawValue)://\(requirements.host.urlForm) (client \(requirements.clientClass.rawValue), \(requirements.osProfile.releases))")
        output.line("  rule:              \(rule.kind.rawValue)" + (rule.key.map { " (\($0))" } ?? ""))
        if requirements.scheme == .http {
            output.line("  cleartext http://: " + (requirements.cleartextAllowed ? "allowed" : "blocked (NSURLErrorDomain -1022)"))
        } else {
            output.line("  cleartext http://: " + (requirements.cleartextAllowed ? "allowed" : "blocked"))
        }
        if let floor = requirements.minimumTLSVersion {
            output.line("  minimum TLS:       \(floor.plistName)")
            output.line("  forward secrecy:   " + (requirements.requiresForwardSecrecy ? "required" : "not required"))
            output.line("  certificates:      SHA-256+ signatures, RSA >= 2048 or ECC >= 256 bits, system-trusted")
        } else {
            output.line("  ATS minimums:      do not apply (default trust evaluation still does)")
        }
        let suites = requirements.offeredTLS12Suites.map(\.hexID).joined(separator: " ")
        output.line("  TLS 1.2 suites:    \(suites)")
        if let pins = requirements.pins {
            var parts: [String] = []
            if let leaf = pins.leafIdentities { parts.append("leaf one of \(leaf.count)") }
            if let ca = pins.caIdentities { parts.append("CA one of \(ca.count)") }
            output.line("  pins:              " + parts.joined(separator: ", ") + " (" + pins.domains.joined(separator: ", ") + ")")
        } else {
            output.line("  pins:              none")
        }
        output.line("  why:")
        for reason in requirements.explanation { output.line("    - \(reason)") }
    }
}

/// A host from the command line: a bare host, host:port, [v6]:port, or a URL.
struct HostArgument {
    var host: HostIdentity
    var scheme: URLScheme

    struct Failure: Error {
        var message: String
    }

    init(parsing text: String, scheme explicitScheme: URLScheme?) throws(Failure) {
        var rest = Substring(text)
        var scheme = explicitScheme ?? .https
        if let separator = rest.firstRange(of: "://") {
            let urlScheme = rest[..<separator.lowerBound].lowercased()
            guard let parsed = URLScheme(rawValue: urlScheme) ?? (urlScheme == "wss" ? .https : urlScheme == "ws" ? .http : nil) else {
                throw Failure(message: "\"\(urlScheme)\" is not a scheme ATS governs (http, https, ws, wss)")
            }
            if let explicitScheme, explicitScheme != parsed {
                throw Failure(message: "the URL says \(urlScheme) but --scheme says \(explicitScheme.rawValue)")
            }
            scheme = parsed
            rest = rest[separator.upperBound...]
            if let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
            if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        }
        // Drop a port: "host:443" or "[::1]:443"; a bare IPv6 literal has several colons and no port.
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw Failure(message: "unexpected \"\(after)\" after the IPv6 address") }
                try HostArgument.checkPort(after.dropFirst())
            }
            rest = rest[...close]
        } else if let colon = rest.firstIndex(of: ":"), rest.lastIndex(of: ":") == colon {
            try HostArgument.checkPort(rest[rest.index(after: colon)...])
            rest = rest[..<colon]
        }
        do {
            host = try HostIdentity(parsing: rest)
        } catch {
            throw Failure(message: error.description)
        }
        self.scheme = scheme
    }

    private static func checkPort(_ port: Substring) throws(Failure) {
        guard (1...5).contains(port.count), port.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int(port),
            (1...65535).contains(number)
        else { throw Failure(message: "\"\(port)\" is not a port number (1-65535)") }
    }
}
