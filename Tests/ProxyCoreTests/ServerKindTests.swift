import ATSPolicy
import Foundation
import ProxyCore
import TLSTestSupport
import Testing

/// Real servers of each kind behind the proxy in enforce mode, with full ATS for localhost (an empty
/// exception entry, so the local-host exemption does not apply), and curl in front.
@Suite("Server kinds through the proxy", .startsProcesses(timeLimit: .seconds(60)))
struct ServerKindTests {
    @Test(
        "a non-compliant server is blocked: curl sees 403, the 403 names the violation, the log says blocked",
        arguments: NonCompliantServer.allCases)
    func blocked(_ kind: NonCompliantServer) throws {
        let factory = try CertificateFactory()
        let server = try TestTLSServer(directory: factory.directory, try kind.serverArguments(factory))
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost)
        defer { proxy.stop() }
        let curl = try proxy.curlHTTPS(factory, port: server.port)
        // The same CONNECT by hand, for the 403's headers (answered from the verdict cache).
        let raw = proxy.rawConnect(host: "localhost", port: server.port)
        let lines = try proxy.waitForLogLines(2)
        withExtendedLifetime(server) {}

        expectBlocked(curl, lines.first, violations: [kind.violation], nsurl: kind.error.nsurl, ssl: kind.error.ssl)
        #expect(raw.status == 403, "\(raw)")
        #expect(raw.header("X-ATS-Violations") == kind.violation, "\(raw)")
        #expect(
            raw.header("X-ATS-Error") == kind.error.ssl.map { "\(kind.error.nsurl) (\($0))" } ?? "\(kind.error.nsurl)")
        // The body's heading, then a line per violation ("name: explanation.") and one with what allows it.
        let body = raw.text.components(separatedBy: "\r\n\r\n").dropFirst().joined()
        let named = body.split(separator: "\n").dropFirst().filter { !$0.hasPrefix("  ") }.map {
            $0.prefix { $0 != ":" }
        }
        #expect(named == [Substring(kind.violation)], "\(raw)")
        #expect(lines.count == 2)
        for line in lines {
            #expect(line.method == "CONNECT")
            #expect(line.host == "localhost")
            #expect(line.ruleKind == "exception" && line.ruleKey == "localhost", "\(line)")
            #expect(line.action == "blocked" && line.violations == [kind.violation], "\(line)")
            #expect(line.bytesDown == 0)
            // The probe completed a handshake (ATS-shaped or permissive) and logged what it saw.
            #expect(line.tlsVersion != nil, "\(line)")
            if let version = kind.facts.version { #expect(line.tlsVersion == version, "\(line)") }
            if let cipher = kind.facts.cipher { #expect(line.cipher == cipher, "\(line)") }
            if let subjects = kind.facts.subjects { #expect(line.certificateSubjects == subjects, "\(line)") }
        }
    }

    @Test(
        "a compliant server is allowed: curl gets the page through the tunnel, the log says allowed",
        arguments: CompliantServer.allCases)
    func allowed(_ kind: CompliantServer) throws {
        let factory = try CertificateFactory()
        let server = try TestTLSServer(directory: factory.directory, try kind.serverArguments(factory))
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost)
        defer { proxy.stop() }
        let curl = try proxy.curlHTTPS(factory, port: server.port)
        let lines = try proxy.waitForLogLines(1)
        withExtendedLifetime(server) {}

        #expect(lines.count == 1)
        expectAllowed(curl, lines.first, tlsVersion: kind.tlsVersion)
        #expect(lines.first?.ruleKind == "exception")
        #expect(lines.first?.trust == "user_installed_root")
        #expect(lines.first?.certificateSubjects == ["CN=leaf", "CN=root"])
    }
}

/// One NSPinnedDomains entry for localhost: which key the leaf pin and the CA pin name.
struct PinCase: Sendable, CustomTestStringConvertible {
    /// `leaf`, `root` (not sent by the server) or `other` (a key in no certificate); nil for no array.
    var leafPin: String?
    var caPin: String?
    var matches: Bool

    var testDescription: String {
        let leaf = leafPin.map { "leaf pin = \($0) key" } ?? "no leaf pin"
        let ca = caPin.map { "CA pin = \($0) key" } ?? "no CA pin"
        return "\(leaf), \(ca): " + (matches ? "allowed" : "pin_mismatch")
    }

    static let all: [PinCase] = [
        PinCase(leafPin: "leaf", caPin: nil, matches: true),
        PinCase(leafPin: "other", caPin: nil, matches: false),
        // The CA pin is checked against the validated path, root included, even though the server never
        // sends its root (Apple open source: SecPolicyServer.c; Apple: Identity Pinning, 2021).
        PinCase(leafPin: nil, caPin: "root", matches: true),
        PinCase(leafPin: nil, caPin: "other", matches: false),
        PinCase(leafPin: "leaf", caPin: "root", matches: true),
        // Both arrays present: both must match (Apple: NSPinnedDomains).
        PinCase(leafPin: "leaf", caPin: "other", matches: false),
        PinCase(leafPin: "other", caPin: "root", matches: false),
    ]
}

@Suite("Pinned domains through the proxy", .startsProcesses(timeLimit: .seconds(60)))
struct PinnedDomainTests {
    static func pinnedPolicy(_ factory: CertificateFactory, _ pin: PinCase) throws -> String {
        func array(_ key: String, _ name: String?) throws -> String {
            guard let name else { return "" }
            let hash = try factory.spkiSHA256Base64(key: name)
            return "<key>\(key)</key><array><dict><key>SPKI-SHA256-BASE64</key><string>\(hash)</string></dict></array>"
        }
        return "<key>NSPinnedDomains</key><dict><key>localhost</key><dict>"
            + (try array("NSPinnedLeafIdentities", pin.leafPin)) + (try array("NSPinnedCAIdentities", pin.caPin))
            + "</dict></dict>"
    }

    @Test(
        "a pinned localhost with full ATS: the right SPKI passes, a wrong one is pin_mismatch", arguments: PinCase.all)
    func pinned(_ pin: PinCase) throws {
        let factory = try compliantChain()
        try factory.key("other", "rsa:2048")
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost + (try Self.pinnedPolicy(factory, pin)))
        defer { proxy.stop() }
        let curl = try proxy.curlHTTPS(factory, port: server.port)
        let lines = try proxy.waitForLogLines(1)
        withExtendedLifetime(server) {}

        #expect(lines.count == 1)
        if pin.matches {
            expectAllowed(curl, lines.first, tlsVersion: "TLSv1.3")
        } else {
            expectBlocked(curl, lines.first, violations: ["pin_mismatch"], nsurl: -1202, ssl: -9807)
        }
    }
}
