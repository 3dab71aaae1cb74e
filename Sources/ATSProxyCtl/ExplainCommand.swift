import ATSPolicy
import ATSPolicyArguments
import ArgumentParser
import TextFormats

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

            Examples:
              atsproxyctl explain --policy Info.plist api.example.com cdn.example.com
              atsproxyctl explain --policy Info.plist http://localhost:8000/
              atsproxyctl explain --policy Info.plist --client webkit 192.168.1.20
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
            let requirements = loaded.policy.requirements(
                for: target.host, scheme: target.scheme, clientClass: clientClass)
            let ignored = HostFindings.relevant(to: requirements, among: loaded.policy.findings)
            if json {
                output.line(jsonAnswer(requirements, port: target.port, ignored: ignored).serialized)
            } else {
                if index > 0 { output.line("") }
                printRequirements(requirements, port: target.port, ignored: ignored, to: output)
            }
        }
        return status
    }

    /// The requirements' JSON, with the port asked about (null without one) and the findings that
    /// bear on the answer (``HostFindings``).
    private func jsonAnswer(_ requirements: Requirements, port: UInt16?, ignored: [Finding]) -> JSONValue {
        guard case .object(var fields) = requirements.json else { return requirements.json }
        let hostIndex = (fields.firstIndex { $0.0 == "host" } ?? fields.count - 1) + 1
        fields.insert(("port", port.map { .int(Int($0)) } ?? .null), at: hostIndex)
        fields.append(("ignored_keys", .array(ignored.map(\.json))))
        return .object(fields)
    }

    private func printRequirements(_ requirements: Requirements, port: UInt16?, ignored: [Finding], to output: Output) {
        let rule = requirements.rule
        let authority = requirements.host.urlForm + (port.map { ":\($0)" } ?? "")
        output.line(
            "\(requirements.scheme.rawValue)://\(authority) (client \(requirements.clientClass.rawValue), \(requirements.osProfile.releases))"
        )
        output.line("  rule:              \(rule.kind.rawValue)" + (rule.key.map { " (\($0))" } ?? ""))
        if requirements.scheme == .http {
            output.line(
                "  cleartext http://: "
                    + (requirements.cleartextAllowed ? "allowed" : "blocked (NSURLErrorDomain -1022)"))
        } else {
            output.line("  cleartext http://: " + (requirements.cleartextAllowed ? "allowed" : "blocked"))
        }
        if let floor = requirements.minimumTLSVersion {
            output.line("  minimum TLS:       \(floor.plistName)")
            output.line("  forward secrecy:   " + (requirements.requiresForwardSecrecy ? "required" : "not required"))
            output.line("  certificates:      SHA-256+ signatures, RSA >= 2048 or ECC >= 256 bits, system-trusted")
        } else {
            output.line("  ATS minimums:      do not apply (default trust evaluation still does)")
            // iOS 26 keeps a TLS floor with ATS off: without this line the output would suggest TLS 1.0 passes.
            if requirements.osProfile.lowestTLSVersion > .tls10, requirements.scheme == .https {
                output.line(
                    "  minimum TLS:       \(requirements.osProfile.lowestTLSVersion.plistName) "
                        + "(\(requirements.osProfile.releases) refuses TLS 1.0 and 1.1 for every load)")
            }
        }
        let suites = requirements.offeredTLS12Suites.map(\.hexID).joined(separator: " ")
        output.line("  TLS 1.2 suites:    \(suites)")
        if requirements.scheme == .http {
            output.line("  pins:              do not apply to http://")
        } else if let pins = requirements.pins {
            var parts: [String] = []
            if let leaf = pins.leafIdentities { parts.append("leaf one of \(leaf.count)") }
            if let ca = pins.caIdentities { parts.append("CA one of \(ca.count)") }
            output.line(
                "  pins:              " + parts.joined(separator: ", ") + " (" + pins.domains.joined(separator: ", ")
                    + ")")
        } else {
            output.line("  pins:              none")
        }
        output.line("  why:")
        for reason in requirements.explanation { output.line("    - \(reason)") }
        if let port {
            output.line(
                "    - the port plays no part: ATS judges \(requirements.host.urlForm) the same on every port, \(port) included"
            )
        }
        for finding in ignored {
            let line = finding.location.line.map { "line \($0): " } ?? ""
            output.line(
                "    - ignored in the policy, \(line)\(finding.path): \(finding.message)"
                    + (finding.fix.map { " (\($0))" } ?? ""))
        }
    }
}
