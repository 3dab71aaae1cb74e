import ATSPolicy
import Foundation
import ProxyCore
import TLSTestSupport
import Testing

/// One connection under one policy: which host curl asks for, and what the proxy must decide.
struct PolicyCase: Sendable, CustomTestStringConvertible {
    var name: String
    var policyXML: String
    /// Whether 127.0.0.1 counts as a public address (`local_networks` empty) rather than a local one.
    var loopbackIsPublic = false
    var osProfile: OSProfile = .ios17
    var host: String
    /// s_server options besides the certificate.
    var server: [String]
    /// Expected: nil for allowed and compliant, else the violations of a blocked connection.
    var violations: [String]?
    var ruleKind: String
    var ruleKey: String?

    var testDescription: String { name }

    /// Apple's error for the first violation (docs/ats-rules.md, "Violations", as `VerdictChecker` maps it): -9800
    /// for a TLS 1.2 server under a TLS 1.3 floor, -9836 for other version failures, -9824 for suites.
    var error: (nsurl: Int, ssl: Int?) {
        switch violations?.first {
        case "tls_version": (-1200, server.contains("-tls1_2") ? -9800 : -9836)
        case "cipher_not_fs", "cipher_not_ats": (-1200, -9824)
        case "pin_mismatch": (-1202, -9807)
        default: (0, nil)
        }
    }
}

/// The same weak servers as ``ServerKindTests`` under policies that relax, cancel or restore ATS.
@Suite("Policy variants through the proxy", .startsProcesses(timeLimit: .seconds(60)))
struct PolicyVariantTests {
    /// s_server options for TLS 1.0 only with an ECDHE suite, so that only the version is wrong.
    static let tls10 = ["-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"]
    static let tls11 = ["-tls1_1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"]
    static let tls12 = ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"]

    static func exception(_ host: String, _ keys: String) -> String {
        "<key>NSExceptionDomains</key><dict><key>\(host)</key><dict>\(keys)</dict></dict>"
    }

    static let arbitraryLoads = "<key>NSAllowsArbitraryLoads</key><true/>"

    /// Runs `policyCase`: one server, one proxy, one curl, one log line.
    static func run(_ policyCase: PolicyCase) throws {
        let factory = try loopbackChain()
        var serverOptions = ["-cert", "leaf.pem", "-key", "leaf.key"] + policyCase.server
        if policyCase.server.contains("-dhparam") {
            try factory.dhParameters("dh")
        }
        if !policyCase.server.contains("-cipher") { serverOptions += ["-cipher", "ALL:@SECLEVEL=0"] }
        let server = try TestTLSServer(directory: factory.directory, serverOptions)
        let proxy = try TestProxy.start(
            factory, policyXML: policyCase.policyXML,
            policySettings: PolicySettings(
                osProfile: policyCase.osProfile,
                localNetworks: policyCase.loopbackIsPublic ? [] : AddressRange.defaultLocalNetworks))
        defer { proxy.stop() }
        let curl = try proxy.curlHTTPS(factory, name: policyCase.host, port: server.port, options: weakTLSCurlOptions)
        let lines = try proxy.waitForLogLines(1)
        withExtendedLifetime(server) {}

        #expect(lines.count == 1)
        let line = lines.first
        if let violations = policyCase.violations {
            expectBlocked(curl, line, violations: violations, nsurl: policyCase.error.nsurl, ssl: policyCase.error.ssl)
        } else {
            expectAllowed(curl, line)
        }
        #expect(line?.host == policyCase.host)
        #expect(line?.ruleKind == policyCase.ruleKind, "\(String(describing: line))")
        #expect(line?.ruleKey == policyCase.ruleKey, "\(String(describing: line))")
    }

    // MARK: - NSAllowsArbitraryLoads and what cancels it

    static let globalCases: [PolicyCase] = [
        PolicyCase(
            name: "NSAllowsArbitraryLoads: TLS 1.0 at a public address (127.0.0.1, local_networks empty) is allowed",
            policyXML: arbitraryLoads, loopbackIsPublic: true, host: "127.0.0.1", server: tls10, violations: nil,
            ruleKind: "arbitrary_loads", ruleKey: "NSAllowsArbitraryLoads"),
        PolicyCase(
            name:
                "NSAllowsArbitraryLoads + NSAllowsLocalNetworking: cancelled, TLS 1.0 at a public address blocked (§2.1)",
            policyXML: arbitraryLoads + "<key>NSAllowsLocalNetworking</key><true/>", loopbackIsPublic: true,
            host: "127.0.0.1", server: tls10, violations: ["tls_version"], ruleKind: "default", ruleKey: nil),
        PolicyCase(
            name: "NSAllowsArbitraryLoads + NSAllowsLocalNetworking: localhost is local, TLS 1.0 there allowed (§2.5)",
            policyXML: arbitraryLoads + "<key>NSAllowsLocalNetworking</key><true/>", host: "localhost", server: tls10,
            violations: nil, ruleKind: "local", ruleKey: "NSAllowsLocalNetworking"),
        PolicyCase(
            name:
                "NSAllowsArbitraryLoads + NSAllowsLocalNetworking = NO: ATS for localhost too, TLS 1.0 blocked (§2.5)",
            policyXML: arbitraryLoads + "<key>NSAllowsLocalNetworking</key><false/>", host: "localhost", server: tls10,
            violations: ["tls_version"], ruleKind: "default", ruleKey: nil),
        PolicyCase(
            name: "no ATS keys at all: localhost is local, TLS 1.0 allowed (iOS 10+ default, §2.5)",
            policyXML: "", host: "localhost", server: tls10, violations: nil, ruleKind: "local", ruleKey: nil),
        PolicyCase(
            name:
                "no ATS keys at all: 127.0.0.1 is in the default local_networks, TLS 1.0 allowed (§2.5, decisions table)",
            policyXML: "", host: "127.0.0.1", server: tls10, violations: nil, ruleKind: "local", ruleKey: nil),
        PolicyCase(
            name: "no ATS keys, 127.0.0.1 public: full ATS, TLS 1.0 blocked (iOS 17: IP literals are not exempt, §2.5)",
            policyXML: "", loopbackIsPublic: true, host: "127.0.0.1", server: tls10, violations: ["tls_version"],
            ruleKind: "default", ruleKey: nil),
    ]

    @Test("global keys", arguments: globalCases)
    func global(_ policyCase: PolicyCase) throws { try Self.run(policyCase) }

    // MARK: - iOS 26: TLS 1.0 and 1.1 refused for every load

    /// docs/ats-rules.md, "The decisions" (`os_profile`): what lets a TLS 1.0 server through on
    /// ios17 (arbitrary loads, a TLSv1.0 exception, the local-host exemption) does not on ios26. The rule
    /// that decided is still named: it is why the reader expected the load to pass.
    static let osProfileCases: [PolicyCase] = [OSProfile.ios17, .ios26].flatMap { os -> [PolicyCase] in
        let blocked: [String]? = os == .ios26 ? ["tls_version"] : nil
        let verb = os == .ios26 ? "blocked" : "allowed"
        return [
            PolicyCase(
                name: "\(os.rawValue), NSAllowsArbitraryLoads: TLS 1.0 at a public address is \(verb)",
                policyXML: arbitraryLoads, loopbackIsPublic: true, osProfile: os, host: "127.0.0.1", server: tls10,
                violations: blocked, ruleKind: "arbitrary_loads", ruleKey: "NSAllowsArbitraryLoads"),
            PolicyCase(
                name: "\(os.rawValue), NSExceptionMinimumTLSVersion = TLSv1.0: a TLS 1.1 server is \(verb)",
                policyXML: exception("localhost", "<key>NSExceptionMinimumTLSVersion</key><string>TLSv1.0</string>"),
                osProfile: os, host: "localhost", server: tls11, violations: blocked, ruleKind: "exception",
                ruleKey: "localhost"),
            PolicyCase(
                name: "\(os.rawValue), no keys: localhost is local, TLS 1.0 there is \(verb)",
                policyXML: "", osProfile: os, host: "localhost", server: tls10, violations: blocked, ruleKind: "local",
                ruleKey: nil),
        ]
    }

    @Test("os profiles: iOS 26 refuses TLS 1.0/1.1 whatever the policy", arguments: osProfileCases)
    func osProfiles(_ policyCase: PolicyCase) throws { try Self.run(policyCase) }

    // MARK: - Exceptions

    static let exceptionCases: [PolicyCase] = [
        PolicyCase(
            name: "NSExceptionMinimumTLSVersion = TLSv1.0: a TLS 1.0 server is allowed",
            policyXML: exception("localhost", "<key>NSExceptionMinimumTLSVersion</key><string>TLSv1.0</string>"),
            host: "localhost", server: tls10, violations: nil, ruleKind: "exception", ruleKey: "localhost"),
        PolicyCase(
            name: "NSExceptionMinimumTLSVersion = TLSv1.0: a TLS 1.1 server is allowed",
            policyXML: exception("localhost", "<key>NSExceptionMinimumTLSVersion</key><string>TLSv1.0</string>"),
            host: "localhost", server: tls11, violations: nil, ruleKind: "exception", ruleKey: "localhost"),
        PolicyCase(
            name: "NSExceptionMinimumTLSVersion = TLSv1.1: a TLS 1.0 server is still blocked",
            policyXML: exception("localhost", "<key>NSExceptionMinimumTLSVersion</key><string>TLSv1.1</string>"),
            host: "localhost", server: tls10, violations: ["tls_version"], ruleKind: "exception", ruleKey: "localhost"),
        PolicyCase(
            name: "NSExceptionMinimumTLSVersion = TLSv1.3: a TLS 1.2 server is blocked",
            policyXML: exception("localhost", "<key>NSExceptionMinimumTLSVersion</key><string>TLSv1.3</string>"),
            host: "localhost", server: tls12, violations: ["tls_version"], ruleKind: "exception", ruleKey: "localhost"),
        PolicyCase(
            name:
                "NSExceptionMinimumTLSVersion = 1.0 (electron-builder's value) is invalid: floor stays TLS 1.2 (§1.5)",
            policyXML: exception("localhost", "<key>NSExceptionMinimumTLSVersion</key><string>1.0</string>"),
            host: "localhost", server: tls10, violations: ["tls_version"], ruleKind: "exception", ruleKey: "localhost"),
        PolicyCase(
            name:
                "NSExceptionRequiresForwardSecrecy = NO with NSIncludesSubdomains: an RSA key-exchange server is allowed",
            policyXML: exception("localhost", forwardSecrecyOff), host: "localhost",
            server: ["-tls1_2", "-cipher", "AES128-GCM-SHA256"], violations: nil, ruleKind: "exception",
            ruleKey: "localhost"),
        PolicyCase(
            name: "NSExceptionRequiresForwardSecrecy = NO: AES256-SHA (in the compatibility group) is allowed (§3.3 C)",
            policyXML: exception("localhost", forwardSecrecyOff), host: "localhost",
            server: ["-tls1_2", "-cipher", "AES256-SHA"], violations: nil, ruleKind: "exception", ruleKey: "localhost"),
        PolicyCase(
            name: "NSExceptionRequiresForwardSecrecy = NO: AES256-SHA256 (dropped in 2022) is cipher_not_ats (§3.3 C)",
            policyXML: exception("localhost", forwardSecrecyOff), host: "localhost",
            server: ["-tls1_2", "-cipher", "AES256-SHA256"], violations: ["cipher_not_ats"], ruleKind: "exception",
            ruleKey: "localhost"),
        PolicyCase(
            name: "NSExceptionRequiresForwardSecrecy = NO: a DHE-only server is still cipher_not_ats",
            policyXML: exception("localhost", forwardSecrecyOff), host: "localhost",
            server: ["-tls1_2", "-cipher", "DHE-RSA-AES128-GCM-SHA256", "-dhparam", "dh.pem"],
            violations: ["cipher_not_ats"], ruleKind: "exception", ruleKey: "localhost"),
        PolicyCase(
            name: "NSExceptionRequiresForwardSecrecy = NO: TLS 1.2 is still required (§7 case 8)",
            policyXML: exception("localhost", forwardSecrecyOff), host: "localhost", server: tls10,
            violations: ["tls_version"], ruleKind: "exception", ruleKey: "localhost"),
        PolicyCase(
            name:
                "NSAllowsArbitraryLoads + an empty entry for localhost: full ATS for localhost, TLS 1.0 blocked (§1.3)",
            policyXML: arbitraryLoads + exception("localhost", ""), loopbackIsPublic: true, host: "localhost",
            server: tls10, violations: ["tls_version"], ruleKind: "exception", ruleKey: "localhost"),
        PolicyCase(
            name: "NSAllowsArbitraryLoads + an empty entry for localhost: public 127.0.0.1 keeps arbitrary loads",
            policyXML: arbitraryLoads + exception("localhost", ""), loopbackIsPublic: true, host: "127.0.0.1",
            server: tls10, violations: nil, ruleKind: "arbitrary_loads", ruleKey: "NSAllowsArbitraryLoads"),
        PolicyCase(
            name: "an IP exception with NSExceptionMinimumTLSVersion = TLSv1.0 for public 127.0.0.1: allowed (§2.4)",
            policyXML: exception("127.0.0.1", "<key>NSExceptionMinimumTLSVersion</key><string>TLSv1.0</string>"),
            loopbackIsPublic: true, host: "127.0.0.1", server: tls10, violations: nil, ruleKind: "exception",
            ruleKey: "127.0.0.1"),
        PolicyCase(
            name: "a name exception does not cover the address: TLSv1.0 for localhost, public 127.0.0.1 blocked (§1.2)",
            policyXML: exception("localhost", "<key>NSExceptionMinimumTLSVersion</key><string>TLSv1.0</string>"),
            loopbackIsPublic: true, host: "127.0.0.1", server: tls10, violations: ["tls_version"], ruleKind: "default",
            ruleKey: nil),
    ]

    static let forwardSecrecyOff =
        "<key>NSExceptionRequiresForwardSecrecy</key><false/><key>NSIncludesSubdomains</key><true/>"

    @Test("exception domains", arguments: exceptionCases)
    func exceptions(_ policyCase: PolicyCase) throws { try Self.run(policyCase) }

    // MARK: - Default trust where ATS is off

    /// Where ATS is off (here the local-host exemption: no ATS keys at all), the ATS
    /// minimums go but default server trust stays: expiry, names, anchors, RSA 2048, SHA-2, validity
    /// length, serverAuth (docs/ats-rules.md, "Which rule decides, for one connection"; Apple: HT210176). The app
    /// is not assumed to override trust (docs/ats-rules.md, "The decisions").
    @Test(
        "ATS off for localhost (local, no keys): weak protocols pass, default trust still refuses bad certificates",
        arguments: [
            NonCompliantServer.tls10Only, .tls11Only, .rsaKeyExchangeOnly, .rsa1024Leaf, .sha1Leaf, .sha1Intermediate,
            .expired, .notYetValid, .otherHostName, .selfSignedLeaf, .unknownRoot, .validityOver825Days,
            .clientAuthEKUOnly,
        ])
    func defaultTrustWithoutATS(_ kind: NonCompliantServer) throws {
        let factory = try CertificateFactory()
        let server = try TestTLSServer(directory: factory.directory, try kind.serverArguments(factory))
        let proxy = try TestProxy.start(factory, policyXML: "")
        defer { proxy.stop() }
        let curl = try proxy.curlHTTPS(factory, port: server.port, options: weakTLSCurlOptions)
        let lines = try proxy.waitForLogLines(1)
        withExtendedLifetime(server) {}

        #expect(lines.count == 1)
        #expect(lines.first?.ruleKind == "local", "\(String(describing: lines.first))")
        switch kind {
        case .tls10Only, .tls11Only, .rsaKeyExchangeOnly:
            expectAllowed(curl, lines.first, tlsVersion: kind.facts.version)
        case .rsa1024Leaf, .sha1Leaf, .sha1Intermediate:
            // Not an ATS status any more: a plain trust failure, -1202 rather than
            // ATS's -1200 (docs/ats-rules.md, "Violations").
            expectBlocked(curl, lines.first, violations: [kind.violation], nsurl: -1202, ssl: -9807)
        default:
            expectBlocked(curl, lines.first, violations: [kind.violation], nsurl: kind.error.nsurl, ssl: kind.error.ssl)
        }
    }

    // MARK: - iOS 9 had no TLS 1.3

    @Test(
        "iOS 9's client stops at TLS 1.2: the probe of a server speaking TLS 1.2 and 1.3 gets TLS 1.2 under ios9, 1.3 under ios17",
        arguments: [OSProfile.ios9, .ios17])
    func ios9WithoutTLS13(_ os: OSProfile) throws {
        let factory = try compliantChain()
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let proxy = try TestProxy.start(
            factory, policyXML: fullATSForLocalhost, policySettings: PolicySettings(osProfile: os))
        defer { proxy.stop() }
        let curl = try proxy.curlHTTPS(factory, port: server.port)
        let lines = try proxy.waitForLogLines(1)
        withExtendedLifetime(server) {}
        expectAllowed(curl, lines.first, tlsVersion: os == .ios9 ? "TLSv1.2" : "TLSv1.3")
    }

    // MARK: - iOS 26's two-segment hello

    /// Servers and middleboxes that read the ClientHello from one TCP segment fail iOS 26 devices, whose
    /// hello (X25519MLKEM768's key share) spans two, and pass a small hello (docs/ats-rules.md, "The ATS
    /// client's ClientHello"): the probe's ios26 hello must fail them too.
    @Test(
        "a server that reads the ClientHello from one segment: handshake_failure under ios26, allowed under ios17",
        arguments: [OSProfile.ios17, .ios26])
    func oneSegmentHelloReader(_ os: OSProfile) throws {
        let factory = try compliantChain()
        let backend = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let server = try OneSegmentHelloServer(backend: backend.port)
        let proxy = try TestProxy.start(
            factory, policyXML: fullATSForLocalhost, policySettings: PolicySettings(osProfile: os))
        defer { proxy.stop() }
        let curl = try proxy.curlHTTPS(factory, port: server.port)
        let lines = try proxy.waitForLogLines(1)
        withExtendedLifetime(backend) {}
        let group = ((lines.first?.fields["tls"] as? [String: Any])?["group"] as? [String: Any])?["name"] as? String
        if os == .ios26 {
            // Closed with no alert: errSSLClosedNoNotify. The permissive probe's small hello got through.
            expectBlocked(curl, lines.first, violations: ["handshake_failure"], nsurl: -1200, ssl: -9816)
            #expect(server.rejected == 1)
            let explanation = (lines.first?.fields["explanations"] as? [String])?.first ?? ""
            #expect(explanation.contains("the ClientHello was iOS 26's"), "\(explanation)")
        } else {
            expectAllowed(curl, lines.first, tlsVersion: "TLSv1.3")
            #expect(server.rejected == 0)
            #expect(group == "x25519", "\(String(describing: lines.first))")
        }
    }

    // MARK: - Pins where ATS is off

    @Test(
        "NSPinnedDomains applies where ATS does not: localhost is local (no ATS), TLS 1.0 passes, a wrong pin does not",
        arguments: [true, false])
    func pinsWithoutATS(_ rightPin: Bool) throws {
        let factory = try compliantChain()
        try factory.key("other", "rsa:2048")
        let hash = try factory.spkiSHA256Base64(key: rightPin ? "leaf" : "other")
        let server = try TestTLSServer(
            directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"] + Self.tls10)
        let policy =
            "<key>NSPinnedDomains</key><dict><key>localhost</key><dict><key>NSPinnedLeafIdentities</key>"
            + "<array><dict><key>SPKI-SHA256-BASE64</key><string>\(hash)</string></dict></array></dict></dict>"
        let proxy = try TestProxy.start(factory, policyXML: policy)
        defer { proxy.stop() }
        let curl = try proxy.curlHTTPS(factory, port: server.port, options: weakTLSCurlOptions)
        let lines = try proxy.waitForLogLines(1)
        withExtendedLifetime(server) {}

        #expect(lines.count == 1)
        #expect(lines.first?.ruleKind == "local")
        if rightPin {
            expectAllowed(curl, lines.first, tlsVersion: "TLSv1.0")
        } else {
            // Only the pin: the TLS version is not an ATS violation for a local host.
            expectBlocked(curl, lines.first, violations: ["pin_mismatch"], nsurl: -1202, ssl: -9807)
        }
    }

    // MARK: - Report mode

    @Test(
        "report mode lets non-compliant servers through and logs them as allowed but not compliant",
        arguments: [
            NonCompliantServer.tls10Only, .rsaKeyExchangeOnly, .dheOnly, .rsa1024Leaf, .sha1Leaf, .expired,
            .otherHostName,
            .unknownRoot, .validityOver825Days,
        ])
    func reportMode(_ kind: NonCompliantServer) throws {
        let factory = try CertificateFactory()
        let server = try TestTLSServer(directory: factory.directory, try kind.serverArguments(factory))
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost, mode: .report)
        defer { proxy.stop() }
        // curl's own checks decide whether it completes its handshake through the tunnel; the proxy
        // must open the tunnel either way.
        let curl = try proxy.curlHTTPS(factory, port: server.port, options: weakTLSCurlOptions)
        let lines = try proxy.waitForLogLines(1)
        withExtendedLifetime(server) {}

        #expect(lines.count == 1)
        let line = try #require(lines.first)
        #expect(line.action == "allowed", "\(line)")
        #expect(line.compliant == false, "\(line)")
        #expect(line.violations == [kind.violation], "\(line)")
        #expect(line.nsurl == kind.error.nsurl && line.ssl == kind.error.ssl, "\(line)")
        #expect(!curl.standardError.contains("403"), "\(curl.standardError)")
        // The tunnel was opened: curl got a 200 to its CONNECT and sent its ClientHello upstream.
        #expect((line.fields["bytes_up"] as? Int ?? 0) > 0, "\(line)")
    }
}
