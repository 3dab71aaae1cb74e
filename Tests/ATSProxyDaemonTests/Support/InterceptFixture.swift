import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// What the intercept-mode process tests share: a scratch directory with an upstream test root
/// (`root.pem`, given to the daemon with `--ca-file`, a user-installed root), the interception CA
/// made by `atsproxyctl ca init` (`ca/ca.pem`, `ca/ca.key`), a hosts file mapping the test names to
/// 127.0.0.1, and a policy file (the ATS defaults unless a test writes it).
final class InterceptFixture {
    let factory: CertificateFactory
    let hostsFile: String
    let policy: PolicyFile
    var caDir: String { factory.directory + "/ca" }
    var caPEM: String { caDir + "/ca.pem" }
    var directory: String { factory.directory }

    init(names: [String]) throws {
        factory = try CertificateFactory()
        try factory.rootCA("root")
        let made = atsproxyctl("ca", "init", "--dir", factory.directory + "/ca")
        guard made.exitCode == 0 else { throw FixtureError(message: "atsproxyctl ca init: \(made.standardError)") }
        hostsFile = try writeHostsFile(in: factory.directory, names)
        policy = PolicyFile(directory: factory.directory)
        try policy.write(ats: "")
    }

    /// A leaf `name.pem` under the test root naming `hosts` (DNS names, or IP addresses).
    func leaf(_ name: String, for hosts: [String]) throws {
        let names = hosts.map { $0.first?.isNumber == true ? "IP:\($0)" : "DNS:\($0)" }
        try factory.certificate(
            name, issuer: "root",
            extensions: ["subjectAltName=" + names.joined(separator: ","), "extendedKeyUsage=serverAuth"])
    }

    /// The daemon on 127.0.0.1, trusting only the test root upstream, in intercept mode with the
    /// fixture's CA unless `intercept` is false (tunnel mode), with `extra` flags, run by `wrapper`
    /// (``DaemonProcess/init(directory:_:wrapper:environment:namedByConfig:)``).
    func daemon(intercept: Bool = true, _ extra: [String] = [], wrapper: [String] = []) throws -> DaemonProcess {
        let inspect = intercept ? ["--inspect", "intercept", "--ca-dir", caDir] : []
        return try DaemonProcess(
            directory: directory,
            [
                "--listen", "127.0.0.1:0", "--policy", policy.path, "--hosts-file", hostsFile, "--ca-file",
                factory.path("root.pem"),
                "--system-roots", "off", "--threads", "2",
            ] + inspect + extra, wrapper: wrapper)
    }

    /// curl through the daemon, trusting the interception CA (unless `trust` says otherwise).
    func curl(_ daemon: DaemonProcess, _ arguments: [String], trust: String? = nil) throws -> CommandResult {
        try runCommand(
            "/usr/bin/curl",
            [
                "-sS", "--max-time", "30", "--proxy", "http://127.0.0.1:\(daemon.port)", "--cacert", trust ?? caPEM,
            ] + arguments)
    }

    /// `openssl s_client` through the daemon's CONNECT to `host:port`, with SNI `serverName` (none
    /// when nil), `extra` options: its output (with -showcerts) and exit status.
    func sClient(_ daemon: DaemonProcess, host: String, port: UInt16, serverName: String?, _ extra: [String] = [])
        throws
        -> CommandResult
    {
        let sni = serverName.map { ["-servername", $0] } ?? ["-noservername"]
        return try runCommand(
            "/usr/bin/openssl",
            ["s_client", "-proxy", "127.0.0.1:\(daemon.port)", "-connect", "\(host):\(port)", "-showcerts"] + sni
                + extra,
            input: Data(), timeLimit: 30)
    }

    /// The first certificate in `text` (PEM), written to `name` in the directory; nil without one.
    func firstCertificate(in text: String, savedAs name: String) throws -> String? {
        guard let start = text.range(of: "-----BEGIN CERTIFICATE-----"),
            let end = text.range(of: "-----END CERTIFICATE-----", range: start.upperBound..<text.endIndex)
        else { return nil }
        let pem = String(text[start.lowerBound..<end.upperBound]) + "\n"
        try pem.write(toFile: factory.path(name), atomically: true, encoding: .utf8)
        return factory.path(name)
    }

    /// `openssl x509 -noout <options> -in path`'s output.
    func x509(_ path: String, _ options: [String]) throws -> String {
        String(decoding: try factory.openssl(["x509", "-noout", "-in", path] + options), as: UTF8.self)
    }
}

struct FixtureError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// A log line's fields as the tests compare them.
extension [String: Any] {
    var kind: String { self["kind"] as? String ?? "connection" }
    var action: String? { self["action"] as? String }
    var compliant: Bool? { self["compliant"] as? Bool }
    /// The violations' names (the log may hold names or objects with a "kind"/"name").
    var violationNames: [String] {
        (self["violations"] as? [Any] ?? []).compactMap { item in
            if let name = item as? String { return name }
            let object = item as? [String: Any]
            return (object?["kind"] ?? object?["name"]) as? String
        }
    }
}

extension DaemonProcess {
    /// The log's lines of `kind` ("connection" or "request") once there are at least `count` of
    /// them, or what there is after 10 seconds.
    func lines(_ kind: String, atLeast count: Int) -> [[String: Any]] {
        var found: [[String: Any]] = []
        _ = eventually(timeout: 10) {
            found = logLines(atLeast: 0).filter { $0.kind == kind }
            return found.count >= count
        }
        return found
    }
}

/// Whether the header list on a request line has `name` (any case) with `value`.
func headerValue(_ headers: Any?, _ name: String) -> String? {
    (headers as? [[String: Any]])?.first { ($0["name"] as? String)?.lowercased() == name.lowercased() }?["value"]
        as? String
}
