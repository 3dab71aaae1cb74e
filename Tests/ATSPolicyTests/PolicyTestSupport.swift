import ATSPolicy
import Foundation
import Testing
import TextFormats

// Shared fixtures for the Spec*Tests suites, which check the ATSPolicy engine against
// the ATS rules as docs/ats-rules.md states them, with Apple's documents cited (the rules decide,
// not the code).
//
// Everything lives in the `ATSSpecFixture` protocol extension (suites conform to it) or in the
// `ATSSpec` namespace, so nothing here can collide with helpers other test files declare.

/// Constants and the tables of Apple's documents and code (the cipher groups, the error codes), copied from
/// those sources rather than from the engine, so a test fails when the engine's tables drift from them.
enum ATSSpec {
    /// The evaluation time every connection uses unless a row says otherwise: 2025-06-01 00:00 UTC.
    static let now = DateFormat.seconds(year: 2025, month: 6, day: 1)
    static let day: Int64 = 86_400

    // MARK: Cipher suites, by IANA id (Apple: Information Property List Key Reference, 2018; SecProtocolHelper.m)

    /// (C) TLS 1.3 suites: forward secret by design.
    static let tls13Suites: Set<UInt16> = [0x1301, 0x1302, 0x1303]

    /// (C) `CiphersuitesPFS`, Security-60158.100 (2022) and later: the `current` profile's ATS group.
    static let currentForwardSecret: Set<UInt16> = [
        0xC02C, 0xC02B, 0xCCA9,  // ECDHE-ECDSA AES256-GCM, AES128-GCM, CHACHA20-POLY1305
        0xC030, 0xC02F, 0xCCA8,  // ECDHE-RSA AES256-GCM, AES128-GCM, CHACHA20-POLY1305
        0xC00A, 0xC009,  // ECDHE-ECDSA AES256-SHA, AES128-SHA
        0xC014, 0xC013,  // ECDHE-RSA AES256-SHA, AES128-SHA
    ]
    /// (C) `tls_ciphersuite_group_ats_compatibility`, 2022 and later: AES256-GCM-SHA384,
    /// AES128-GCM-SHA256, AES256-SHA, AES128-SHA.
    static let currentCompatibility: Set<UInt16> = [0x009D, 0x009C, 0x0035, 0x002F]

    /// (A) The 11 documented forward-secret suites of Apple's 2016 documentation (no C014).
    static let documentedForwardSecret: Set<UInt16> = [
        0xC02C, 0xC02B, 0xC024, 0xC00A, 0xC023, 0xC009, 0xC030, 0xC02F, 0xC028, 0xC027, 0xC013,
    ]
    /// (B) The 6 documented suites added by `NSExceptionRequiresForwardSecrecy = NO`.
    static let documentedCompatibility: Set<UInt16> = [0x009D, 0x009C, 0x003D, 0x0035, 0x003C, 0x002F]

    static func forwardSecret(_ profile: CipherProfile) -> Set<UInt16> {
        switch profile {
        case .current: currentForwardSecret
        case .documented: documentedForwardSecret
        }
    }

    static func compatibility(_ profile: CipherProfile) -> Set<UInt16> {
        switch profile {
        case .current: currentCompatibility
        case .documented: documentedCompatibility
        }
    }

    /// Every TLS 1.2 suite the cipher matrix tries: both profiles' groups, plus suites no ATS client
    /// offers (DHE, 3DES, RC4, NULL, CCM).
    static let tls12SuitesUnderTest: [UInt16] = Array(
        currentForwardSecret.union(currentCompatibility).union(documentedForwardSecret)
            .union(documentedCompatibility)
            .union([
                0x009E, 0x009F, 0xCCAA, 0x0033, 0x0039, 0x0067, 0x006B,  // DHE-RSA
                0x000A, 0xC012, 0x0016,  // 3DES
                0x0005, 0xC011,  // RC4
                0x0002, 0x003B,  // NULL
            ])
    ).sorted()

    /// Per violation: the outer NSURLErrorDomain codes and the inner SSL statuses (SecBase.h) an app has
    /// been seen to get, in Apple's documents, nscurl(1) output and Apple's developer forums (nil: "none";
    /// docs/ats-rules.md, "Violations"). Violations with no such reported code (key_size, sig_hash_*,
    /// validity_too_long, no_serverauth_eku, niap_*) are not in the map.
    static let section4Codes: [String: (nsurl: Set<Int>, ssl: Set<Int?>)] = [
        "cleartext": ([-1022], [nil]),
        "tls_version": ([-1200], [-9836, -9824, -9802, -9800]),
        "cipher_not_fs": ([-1200], [-9824, -9801, -9802]),
        "cipher_not_ats": ([-1200], [-9824, -9801, -9802]),
        // Plus "ATS failed system trust", -1200/-9802 (the app overrides trust in its delegate).
        "untrusted_chain": ([-1202, -1203, -1200], [-9813, -9812, -9807, -9802]),
        "name_mismatch": ([-1202, -1200], [-9807, -9843]),
        "expired": ([-1201, -1202, -1200], [-9814]),
        "not_yet_valid": ([-1204], [-9815]),
        "ct": ([-1202, -1200], [-9802, -9807]),
        "pin_mismatch": ([-1200, -1202], [-9802, -9807]),
    ]

    static func hex(_ id: UInt16) -> String {
        let digits = String(id, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: 4 - digits.count) + digits
    }

    // MARK: SPKI pins

    /// A distinct SPKI SHA-256 per seed byte.
    static func spki(_ seed: UInt8) -> SPKIHash {
        SPKIHash(bytes: (0..<32).map { seed &+ UInt8($0) })!
    }

    /// The `SPKI-SHA256-BASE64` string of `spki(seed)`, encoded with Foundation (not the engine).
    static func spkiBase64(_ seed: UInt8) -> String {
        Data((0..<32).map { seed &+ UInt8($0) }).base64EncodedString()
    }

    static let leafKey: UInt8 = 0x10
    static let intermediateKey: UInt8 = 0x40
    static let rootKey: UInt8 = 0x70
    static let otherKey: UInt8 = 0xA0

    // MARK: plist snippets

    static func bool(_ value: Bool) -> String { value ? "<true/>" : "<false/>" }

    /// `<key>host</key><dict>…</dict>` inside `NSExceptionDomains`.
    static func domain(_ host: String, _ body: String = "") -> String {
        "<key>\(host)</key><dict>\(body)</dict>"
    }

    static func exceptionDomains(_ entries: String...) -> String {
        "<key>NSExceptionDomains</key><dict>\(entries.joined())</dict>"
    }

    static let insecureYES = "<key>NSExceptionAllowsInsecureHTTPLoads</key><true/>"
    static let insecureNO = "<key>NSExceptionAllowsInsecureHTTPLoads</key><false/>"
    static let subdomainsYES = "<key>NSIncludesSubdomains</key><true/>"
    static let subdomainsNO = "<key>NSIncludesSubdomains</key><false/>"
    static let forwardSecrecyNO = "<key>NSExceptionRequiresForwardSecrecy</key><false/>"
    static func minimumTLS(_ value: String) -> String {
        "<key>NSExceptionMinimumTLSVersion</key><string>\(value)</string>"
    }
    static let arbitraryLoadsYES = "<key>NSAllowsArbitraryLoads</key><true/>"

    static func identities(_ seeds: [UInt8]) -> String {
        "<array>"
            + seeds.map { "<dict><key>SPKI-SHA256-BASE64</key><string>\(spkiBase64($0))</string></dict>" }.joined()
            + "</array>"
    }
}

/// Helpers available (unqualified) inside every suite that conforms.
protocol ATSSpecFixture {}

extension ATSSpecFixture {

    // MARK: Policies

    /// Loads an ATS dictionary: `atsDictionaryXML` is the inner XML of the root `<dict>`.
    func policy(_ atsDictionaryXML: String, settings: PolicySettings = PolicySettings()) throws
        -> TransportSecurityPolicy
    {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict>\(atsDictionaryXML)</dict></plist>
            """
        return try PolicyLoader.load(bytes: Array(xml.utf8), file: "t.plist", settings: settings)
    }

    /// Loads an Info.plist whose `NSAppTransportSecurity` value is `atsValueXML` (any plist value).
    func infoPlistPolicy(_ atsValueXML: String, settings: PolicySettings = PolicySettings()) throws
        -> TransportSecurityPolicy
    {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict>
            <key>CFBundleIdentifier</key><string>com.example.app</string>
            <key>NSAppTransportSecurity</key>\(atsValueXML)
            </dict></plist>
            """
        return try PolicyLoader.load(bytes: Array(xml.utf8), file: "Info.plist", settings: settings)
    }

    func settings(
        _ os: OSProfile = .ios17, cipher: CipherProfile = .current, legacyKeys: LegacyKeyHandling = .ignore,
        localNetworks: [AddressRange] = AddressRange.defaultLocalNetworks, assumeAppOverridesTrust: Bool = false,
        builtinExceptions: Bool = false
    ) -> PolicySettings {
        PolicySettings(
            osProfile: os, cipherProfile: cipher, legacyKeys: legacyKeys, localNetworks: localNetworks,
            assumeAppOverridesTrust: assumeAppOverridesTrust, builtinExceptions: builtinExceptions)
    }

    // MARK: Certificates (compliant by default)

    /// A leaf valid from 30 days before ``ATSSpec/now`` for 90 days: RSA-2048, SHA-256, serverAuth,
    /// the host in the subjectAltName (as a DNS name or an IP address).
    func leaf(
        for host: String = "example.com", keyType: CertificateFacts.KeyType = .rsa, keyBits: Int = 2048,
        hash: CertificateFacts.SignatureHash = .sha256, notBefore: Int64 = ATSSpec.now - 30 * ATSSpec.day,
        lifetimeDays: Int64 = 90, notAfter: Int64? = nil, dnsNames: [String]? = nil,
        ipAddresses: [IPAddress]? = nil, eku: [CertificateFacts.ExtendedKeyUsage]? = [.serverAuth],
        spki: UInt8 = ATSSpec.leafKey, selfSigned: Bool = false
    ) -> CertificateFacts {
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let address = IPAddress(bare.split(separator: "%").first.map(String.init) ?? bare)
        return CertificateFacts(
            subject: "CN=\(bare)", keyType: keyType, keyBits: keyBits,
            signatureAlgorithm: "\(hash.rawValue)WithRSAEncryption",
            signatureHash: hash, notBefore: notBefore, notAfter: notAfter ?? notBefore + lifetimeDays * ATSSpec.day,
            dnsNames: dnsNames ?? (address == nil ? [bare] : []),
            ipAddresses: ipAddresses ?? (address.map { [$0] } ?? []), extendedKeyUsage: eku,
            spkiSHA256: ATSSpec.spki(spki), isSelfSigned: selfSigned)
    }

    /// An intermediate CA, RSA-2048, SHA-256, valid 2015–2035.
    func intermediate(
        keyType: CertificateFacts.KeyType = .rsa, keyBits: Int = 2048, hash: CertificateFacts.SignatureHash = .sha256,
        notBefore: Int64 = DateFormat.seconds(year: 2015, month: 1, day: 1),
        notAfter: Int64 = DateFormat.seconds(year: 2035, month: 1, day: 1), spki: UInt8 = ATSSpec.intermediateKey
    ) -> CertificateFacts {
        CertificateFacts(
            subject: "CN=Example Issuing CA", keyType: keyType, keyBits: keyBits,
            signatureAlgorithm: "\(hash.rawValue)WithRSAEncryption", signatureHash: hash, notBefore: notBefore,
            notAfter: notAfter, extendedKeyUsage: nil, spkiSHA256: ATSSpec.spki(spki))
    }

    /// A self-signed root, RSA-4096, SHA-256, valid 2010–2040.
    func root(hash: CertificateFacts.SignatureHash = .sha256, keyBits: Int = 4096, spki: UInt8 = ATSSpec.rootKey)
        -> CertificateFacts
    {
        CertificateFacts(
            subject: "CN=Example Root CA", keyType: .rsa, keyBits: keyBits,
            signatureAlgorithm: "\(hash.rawValue)WithRSAEncryption", signatureHash: hash,
            notBefore: DateFormat.seconds(year: 2010, month: 1, day: 1),
            notAfter: DateFormat.seconds(year: 2040, month: 1, day: 1), extendedKeyUsage: nil,
            spkiSHA256: ATSSpec.spki(spki), isSelfSigned: true)
    }

    // MARK: Connections (compliant by default)

    /// What the TLS layer saw: TLS 1.3 with TLS_AES_128_GCM_SHA256, Extended Master Secret, the
    /// validated path leaf → intermediate → system root, and 3 embedded SCTs.
    func connection(
        host: String = "example.com", version: TLSVersion? = .tls13, suite: UInt16? = 0x1301,
        leaf customLeaf: CertificateFacts? = nil, chain: [CertificateFacts]? = nil, trust: ChainTrust = .systemRoot,
        extendedMasterSecret: Bool? = true, signatureScheme: String? = nil, embeddedSCTs: Int = 3,
        deliveredSCTs: Int = 0, at time: Int64 = ATSSpec.now
    ) -> ObservedConnection {
        ObservedConnection(
            tlsVersion: version, cipherSuite: suite.map(CipherSuite.init(id:)),
            extendedMasterSecret: extendedMasterSecret, serverSignatureScheme: signatureScheme,
            chain: chain ?? [customLeaf ?? leaf(for: host), intermediate(), root()], trust: trust,
            embeddedSCTs: embeddedSCTs, deliveredSCTs: deliveredSCTs, evaluationTime: time)
    }

    /// A TLS 1.2 connection with the given suite and an otherwise compliant chain.
    func tls12(_ suite: UInt16, host: String = "example.com", version: TLSVersion = .tls12) -> ObservedConnection {
        connection(host: host, version: version, suite: suite)
    }

    // MARK: Evaluation

    /// The verdict for one load. `http` loads carry no observation; an `https` load without one
    /// gets the compliant default ``connection(host:…)``.
    func verdict(
        _ policy: TransportSecurityPolicy, host: String = "example.com", scheme: URLScheme = .https,
        client: ClientClass = .urlsession, observed: ObservedConnection? = nil
    ) throws -> Verdict {
        let requirements = try policy.requirements(forHost: host, scheme: scheme, clientClass: client)
        let observation = scheme == .http ? nil : (observed ?? connection(host: host))
        let result = policy.verdict(for: requirements, observed: observation)
        expectSection4Codes(result)
        return result
    }

    /// Every violation carries the Apple error codes listed for it above (docs/ats-rules.md, "Violations").
    func expectSection4Codes(_ verdict: Verdict, sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        for violation in verdict.violations {
            guard let codes = ATSSpec.section4Codes[violation.kind.name] else { continue }
            #expect(
                codes.nsurl.contains(violation.error.nsurl),
                "§4 NSURLErrorDomain code of \(violation.kind.name): \(violation.error)", sourceLocation: sourceLocation
            )
            #expect(
                codes.ssl.contains(violation.error.ssl),
                "§4 SSL status of \(violation.kind.name): \(violation.error)", sourceLocation: sourceLocation)
        }
    }

    /// Whether `http://host` may load.
    func cleartextAllowed(
        _ policy: TransportSecurityPolicy, host: String, client: ClientClass = .urlsession
    ) throws -> Bool {
        let result = try verdict(policy, host: host, scheme: .http, client: client)
        // Both views of the answer must agree: the requirements and the verdict.
        #expect(
            result.requirements.cleartextAllowed == result.isCompliant,
            "requirements and verdict disagree for http://\(host)")
        if !result.isCompliant {
            #expect(violationNames(result) == ["cleartext"], "http://\(host)")
            #expect(result.error?.nsurl == -1022, "a blocked cleartext load is NSURLErrorDomain -1022")
        }
        return result.isCompliant
    }

    func violationNames(_ verdict: Verdict) -> [String] { verdict.violations.map(\.kind.name) }
}

/// A row label for parameterised tests.
protocol ATSSpecRow: Sendable, CustomTestStringConvertible {
    var label: String { get }
}

extension ATSSpecRow {
    var testDescription: String { label }
}

/// A conforming value, for row tables whose closures build certificates or connections.
struct ATSSpecBuilder: ATSSpecFixture, Sendable {}
