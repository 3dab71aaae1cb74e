import ATSPolicy
import Testing
import TextFormats

/// Cases Item 28–41: TLS versions (Apple: NSExceptionMinimumTLSVersion), each cipher profile's TLS 1.2 suites
/// by IANA id (Apple: Information Property List Key Reference, 2018; SecProtocolHelper.m), key sizes and
/// signature hashes (Apple: Preventing Insecure Network Connections; HT210176), trust, dates, validity
/// length, EKU (HT210176, HT211025), Certificate Transparency (HT205280) and redirect hops (docs/ats-rules.md).
@Suite("Spec §7.28–41: TLS versions, cipher suites and certificates")
struct SpecTLSAndCertificateTests: ATSSpecFixture {
    static let allProfiles: [OSProfile] = [.ios9, .ios10, .ios17, .ios26]

    // MARK: - Item 28: TLS versions

    struct VersionRow: ATSSpecRow {
        let label: String
        /// `NSExceptionMinimumTLSVersion` for example.com, or nil for no exception.
        let minimum: String?
        let os: OSProfile
        let negotiated: TLSVersion
        let allowed: Bool
    }

    static let versionRows: [VersionRow] = allProfiles.flatMap { os -> [VersionRow] in
        let legacyHonoured = os != .ios26  // ios26 ignores TLS 1.0/1.1 exceptions (docs/ats-rules.md)
        let cases: [(String?, TLSVersion, Bool)] = [
            (nil, .tls10, false), (nil, .tls11, false), (nil, .tls12, true), (nil, .tls13, true),
            ("TLSv1.0", .tls10, legacyHonoured), ("TLSv1.0", .tls11, legacyHonoured), ("TLSv1.0", .tls12, true),
            ("TLSv1.0", .ssl3, false),
            ("TLSv1.1", .tls10, false), ("TLSv1.1", .tls11, legacyHonoured),
            ("TLSv1.2", .tls11, false), ("TLSv1.2", .tls12, true),
            ("TLSv1.3", .tls12, false), ("TLSv1.3", .tls13, true),
        ]
        // Before iOS 14 a TLSv1.3 minimum was not actually enforced (rdar://50887327), so the TLSv1.3
        // rows are asserted only on the profiles that are wholly iOS 14 or later.
        return cases.filter { $0.0 != "TLSv1.3" || os == .ios17 || os == .ios26 }.map { minimum, negotiated, allowed in
            VersionRow(
                label: "minimum \(minimum ?? "default") vs \(negotiated.humanName) [\(os.rawValue)]", minimum: minimum,
                os: os, negotiated: negotiated, allowed: allowed)
        }
    }

    @Test("Item 28: the negotiated TLS version against the floor, per OS profile", arguments: versionRows)
    func tlsVersion(row: VersionRow) throws {
        let xml =
            row.minimum.map { ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.minimumTLS($0))) } ?? ""
        let policy = try policy(xml, settings: settings(row.os))
        let suite: UInt16 = row.negotiated == .tls13 ? 0x1301 : 0xC013
        let result = try verdict(policy, observed: connection(version: row.negotiated, suite: suite))
        if row.allowed {
            #expect(result.isCompliant, "\(violationNames(result))")
        } else {
            #expect(violationNames(result) == ["tls_version"])
            #expect(result.error?.nsurl == -1200)
        }
    }

    @Test("Item 28: on ios26 a TLSv1.0/1.1 floor is raised to TLS 1.2", arguments: ["TLSv1.0", "TLSv1.1"])
    func ios26IgnoresLegacyFloor(minimum: String) throws {
        let xml = ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.minimumTLS(minimum)))
        #expect(
            try policy(xml, settings: settings(.ios26)).requirements(forHost: "example.com").minimumTLSVersion == .tls12
        )
        #expect(
            try policy(xml, settings: settings(.ios17)).requirements(forHost: "example.com").minimumTLSVersion
                == TLSVersion(name: minimum))
    }

    // MARK: - Items 29–35: cipher suites by IANA id, per cipher profile

    @Test("§3.3: the TLS 1.2 suites offered with forward secrecy required", arguments: CipherProfile.allCases)
    func offeredForwardSecret(profile: CipherProfile) throws {
        let requirements = try policy("", settings: settings(cipher: profile)).requirements(forHost: "example.com")
        #expect(Set(requirements.offeredTLS12Suites.map(\.id)) == ATSSpec.forwardSecret(profile))
        #expect(requirements.offeredTLS12Suites.count == ATSSpec.forwardSecret(profile).count, "no duplicates")
        #expect(Set(requirements.offeredTLS13Suites.map(\.id)) == ATSSpec.tls13Suites)
    }

    @Test("§3.3: NSExceptionRequiresForwardSecrecy=NO adds the compatibility group", arguments: CipherProfile.allCases)
    func offeredWithCompatibility(profile: CipherProfile) throws {
        let xml = ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.forwardSecrecyNO))
        let requirements = try policy(xml, settings: settings(cipher: profile)).requirements(forHost: "example.com")
        #expect(
            Set(requirements.offeredTLS12Suites.map(\.id))
                == ATSSpec.forwardSecret(profile).union(ATSSpec.compatibility(profile)))
    }

    /// ⚠️ With forward secrecy off *and* insecure HTTP allowed Apple's code does not restrict the suites (the
    /// default client list; SecProtocolConfiguration.m). atsproxy's decision only commits to "add RSA AES-GCM and
    /// AES-CBC-SHA" (docs/ats-rules.md, "The decisions"), so this asserts a superset of both groups.
    @Test("⚠️ §3.3: FS=NO + insecure HTTP offers at least both groups", arguments: CipherProfile.allCases)
    func offeredUnrestricted(profile: CipherProfile) throws {
        let xml = ATSSpec.exceptionDomains(
            ATSSpec.domain("example.com", ATSSpec.forwardSecrecyNO + ATSSpec.insecureYES))
        let requirements = try policy(xml, settings: settings(cipher: profile)).requirements(forHost: "example.com")
        let offered = Set(requirements.offeredTLS12Suites.map(\.id))
        #expect(offered.isSuperset(of: ATSSpec.forwardSecret(profile).union(ATSSpec.compatibility(profile))))
    }

    struct SuiteRow: ATSSpecRow {
        let label: String
        let profile: CipherProfile
        let forwardSecrecy: Bool
        let suite: UInt16
        let version: TLSVersion
        /// nil: allowed; otherwise the one violation expected.
        let violation: String?
    }

    /// The readable cases (Item 29–35): single named suites, from Apple's 2016 list and from its code.
    static let namedSuiteRows: [SuiteRow] =
        [
            // 29: C014 is in the code's list, not in the documented one.
            SuiteRow(
                label: "29: ECDHE-RSA-AES256-SHA (C014), current", profile: .current, forwardSecrecy: true,
                suite: 0xC014, version: .tls12, violation: nil),
            SuiteRow(
                label: "29: ECDHE-RSA-AES256-SHA (C014), documented", profile: .documented, forwardSecrecy: true,
                suite: 0xC014, version: .tls12, violation: "cipher_not_ats"),
            // 30: C027 was documented and removed from 2022+ clients.
            SuiteRow(
                label: "30: ECDHE-RSA-AES128-SHA256 (C027), documented", profile: .documented, forwardSecrecy: true,
                suite: 0xC027, version: .tls12, violation: nil),
            SuiteRow(
                label: "30: ECDHE-RSA-AES128-SHA256 (C027), current", profile: .current, forwardSecrecy: true,
                suite: 0xC027, version: .tls12, violation: "cipher_not_ats"),
            SuiteRow(
                label: "30: ECDHE-ECDSA-AES256-SHA384 (C024), current", profile: .current, forwardSecrecy: true,
                suite: 0xC024, version: .tls12, violation: "cipher_not_ats"),
            // 31: ChaCha20 is in the code, not in the docs.
            SuiteRow(
                label: "31: ECDHE-RSA-CHACHA20-POLY1305 (CCA8), current", profile: .current, forwardSecrecy: true,
                suite: 0xCCA8, version: .tls12, violation: nil),
            SuiteRow(
                label: "31: ECDHE-RSA-CHACHA20-POLY1305 (CCA8), documented", profile: .documented, forwardSecrecy: true,
                suite: 0xCCA8, version: .tls12, violation: "cipher_not_ats"),
            SuiteRow(
                label: "31: ECDHE-ECDSA-CHACHA20-POLY1305 (CCA9), current", profile: .current, forwardSecrecy: true,
                suite: 0xCCA9, version: .tls12, violation: nil),
            // 32: plain RSA key exchange.
            SuiteRow(
                label: "32: AES256-GCM-SHA384 (009D), current, FS required", profile: .current, forwardSecrecy: true,
                suite: 0x009D, version: .tls12, violation: "cipher_not_fs"),
            SuiteRow(
                label: "32: AES256-GCM-SHA384 (009D), documented, FS required", profile: .documented,
                forwardSecrecy: true, suite: 0x009D, version: .tls12, violation: "cipher_not_fs"),
            SuiteRow(
                label: "32: AES256-GCM-SHA384 (009D), current, FS=NO", profile: .current, forwardSecrecy: false,
                suite: 0x009D, version: .tls12, violation: nil),
            SuiteRow(
                label: "32: AES256-GCM-SHA384 (009D), documented, FS=NO", profile: .documented, forwardSecrecy: false,
                suite: 0x009D, version: .tls12, violation: nil),
            // 33: AES256-SHA256 with FS=NO.
            SuiteRow(
                label: "33: AES256-SHA256 (003D), documented, FS=NO", profile: .documented, forwardSecrecy: false,
                suite: 0x003D, version: .tls12, violation: nil),
            SuiteRow(
                label: "33: AES256-SHA256 (003D), current, FS=NO", profile: .current, forwardSecrecy: false,
                suite: 0x003D, version: .tls12, violation: "cipher_not_ats"),
            SuiteRow(
                label: "33: AES256-SHA256 (003D), documented, FS required", profile: .documented, forwardSecrecy: true,
                suite: 0x003D, version: .tls12, violation: "cipher_not_fs"),
            // 34: DHE is never ATS forward secrecy.
            SuiteRow(
                label: "34: DHE-RSA-AES128-GCM-SHA256 (009E), current", profile: .current, forwardSecrecy: true,
                suite: 0x009E, version: .tls12, violation: "cipher_not_ats"),
            SuiteRow(
                label: "34: DHE-RSA-AES256-SHA (0039), documented", profile: .documented, forwardSecrecy: true,
                suite: 0x0039, version: .tls12, violation: "cipher_not_ats"),
            SuiteRow(
                label: "34: DHE-RSA-AES128-GCM-SHA256 (009E), current, FS=NO", profile: .current, forwardSecrecy: false,
                suite: 0x009E, version: .tls12, violation: "cipher_not_ats"),
            SuiteRow(
                label: "34: DHE-RSA-CHACHA20-POLY1305 (CCAA), documented, FS=NO", profile: .documented,
                forwardSecrecy: false, suite: 0xCCAA, version: .tls12, violation: "cipher_not_ats"),
            // Vocabulary: 3DES, RC4 and NULL are cipher_not_ats.
            SuiteRow(
                label: "vocabulary: DES-CBC3-SHA (000A), FS=NO", profile: .current, forwardSecrecy: false,
                suite: 0x000A, version: .tls12, violation: "cipher_not_ats"),
            SuiteRow(
                label: "vocabulary: RC4-SHA (0005)", profile: .current, forwardSecrecy: true, suite: 0x0005,
                version: .tls12, violation: "cipher_not_ats"),
            SuiteRow(
                label: "vocabulary: NULL-SHA (0002), FS=NO", profile: .documented, forwardSecrecy: false, suite: 0x0002,
                version: .tls12, violation: "cipher_not_ats"),
        ]
        // 35: TLS 1.3 with each of its three suites, both profiles, FS required or not.
        + CipherProfile.allCases.flatMap { profile in
            [true, false].flatMap { fs in
                ATSSpec.tls13Suites.sorted().map { suite in
                    SuiteRow(
                        label: "35: TLS 1.3 \(ATSSpec.hex(suite)), \(profile.rawValue), FS \(fs ? "required" : "NO")",
                        profile: profile, forwardSecrecy: fs, suite: suite, version: .tls13, violation: nil)
                }
            }
        }

    /// The full matrix: every suite under test × profile × forward secrecy, expected from Apple's lists (the 2018
    /// key reference, SecProtocolHelper.m) and the vocabulary's definitions (cipher_not_fs: only suites of the
    /// compatibility group; cipher_not_ats: not offered even with forward secrecy off).
    static let suiteMatrixRows: [SuiteRow] = CipherProfile.allCases.flatMap { profile in
        [true, false].flatMap { fs in
            ATSSpec.tls12SuitesUnderTest.map { suite in
                let violation: String?
                if ATSSpec.forwardSecret(profile).contains(suite) {
                    violation = nil
                } else if ATSSpec.compatibility(profile).contains(suite) {
                    violation = fs ? "cipher_not_fs" : nil
                } else {
                    violation = "cipher_not_ats"
                }
                return SuiteRow(
                    label: "\(ATSSpec.hex(suite)) [\(profile.rawValue), FS \(fs ? "required" : "NO")]",
                    profile: profile,
                    forwardSecrecy: fs, suite: suite, version: .tls12, violation: violation)
            }
        }
    }

    private func checkSuite(_ row: SuiteRow) throws {
        let xml =
            row.forwardSecrecy ? "" : ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.forwardSecrecyNO))
        let policy = try policy(xml, settings: settings(cipher: row.profile))
        let result = try verdict(policy, observed: connection(version: row.version, suite: row.suite))
        if let violation = row.violation {
            #expect(violationNames(result) == [violation])
            #expect(result.error?.nsurl == -1200)
        } else {
            #expect(result.isCompliant, "\(violationNames(result))")
        }
    }

    @Test("Items 29–35: the spec's named suite cases", arguments: namedSuiteRows)
    func namedSuite(row: SuiteRow) throws { try checkSuite(row) }

    @Test("§3.3: every TLS 1.2 suite × cipher profile × forward secrecy", arguments: suiteMatrixRows)
    func suiteMatrix(row: SuiteRow) throws { try checkSuite(row) }

    // MARK: - Items 36–37: key sizes and signature hashes

    struct CertificateRow: ATSSpecRow {
        let label: String
        /// Whether ATS is off for the host (NSAllowsArbitraryLoads): then only default trust applies.
        let arbitraryLoads: Bool
        let chain: @Sendable (ATSSpecBuilder) -> [CertificateFacts]
        let violations: [String]
    }

    static let keyAndHashRows: [CertificateRow] = [
        // 36: key sizes (RSA ≥ 2048, EC ≥ 256, leaf and issuing CAs, ATS or not since iOS 13).
        CertificateRow(
            label: "36: leaf RSA-1024", arbitraryLoads: false,
            chain: { [$0.leaf(keyBits: 1024), $0.intermediate(), $0.root()] }, violations: ["key_size"]),
        CertificateRow(
            label: "36: leaf RSA-1024 under AAL (trust)", arbitraryLoads: true,
            chain: { [$0.leaf(keyBits: 1024), $0.intermediate(), $0.root()] }, violations: ["key_size"]),
        CertificateRow(
            label: "36: leaf RSA-2047", arbitraryLoads: false,
            chain: { [$0.leaf(keyBits: 2047), $0.intermediate(), $0.root()] }, violations: ["key_size"]),
        CertificateRow(
            label: "36: leaf RSA-2048", arbitraryLoads: false,
            chain: { [$0.leaf(keyBits: 2048), $0.intermediate(), $0.root()] }, violations: []),
        CertificateRow(
            label: "36: leaf RSA-4096", arbitraryLoads: false,
            chain: { [$0.leaf(keyBits: 4096), $0.intermediate(), $0.root()] }, violations: []),
        CertificateRow(
            label: "36: leaf EC P-256", arbitraryLoads: false,
            chain: { [$0.leaf(keyType: .ec, keyBits: 256), $0.intermediate(), $0.root()] }, violations: []),
        CertificateRow(
            label: "36: leaf EC P-384", arbitraryLoads: false,
            chain: { [$0.leaf(keyType: .ec, keyBits: 384), $0.intermediate(), $0.root()] }, violations: []),
        CertificateRow(
            label: "36: leaf EC P-224", arbitraryLoads: false,
            chain: { [$0.leaf(keyType: .ec, keyBits: 224), $0.intermediate(), $0.root()] }, violations: ["key_size"]),
        CertificateRow(
            label: "36: intermediate RSA-1024", arbitraryLoads: false,
            chain: { [$0.leaf(), $0.intermediate(keyBits: 1024), $0.root()] }, violations: ["key_size"]),
        CertificateRow(
            label: "36: intermediate RSA-1024 under AAL (trust since iOS 13)", arbitraryLoads: true,
            chain: { [$0.leaf(), $0.intermediate(keyBits: 1024), $0.root()] }, violations: ["key_size"]),
        CertificateRow(
            label: "36: intermediate EC P-384", arbitraryLoads: false,
            chain: { [$0.leaf(keyType: .ec, keyBits: 256), $0.intermediate(keyType: .ec, keyBits: 384), $0.root()] },
            violations: []),
        // 37: signature hashes (ATS: SHA-256+ on leaf and intermediates; trust: no MD5/SHA-1).
        CertificateRow(
            label: "37: leaf SHA-1", arbitraryLoads: false,
            chain: { [$0.leaf(hash: .sha1), $0.intermediate(), $0.root()] }, violations: ["sig_hash_leaf"]),
        CertificateRow(
            label: "37: leaf SHA-1 under AAL (trust)", arbitraryLoads: true,
            chain: { [$0.leaf(hash: .sha1), $0.intermediate(), $0.root()] }, violations: ["sig_hash_leaf"]),
        CertificateRow(
            label: "37: leaf MD5", arbitraryLoads: false,
            chain: { [$0.leaf(hash: .md5), $0.intermediate(), $0.root()] }, violations: ["sig_hash_leaf"]),
        CertificateRow(
            label: "37: leaf SHA-224 (below the ATS floor)", arbitraryLoads: false,
            chain: { [$0.leaf(hash: .sha224), $0.intermediate(), $0.root()] }, violations: ["sig_hash_leaf"]),
        CertificateRow(
            label: "37: leaf SHA-224 under AAL (SHA-2: trust accepts)", arbitraryLoads: true,
            chain: { [$0.leaf(hash: .sha224), $0.intermediate(), $0.root()] }, violations: []),
        CertificateRow(
            label: "37: leaf SHA-384", arbitraryLoads: false,
            chain: { [$0.leaf(hash: .sha384), $0.intermediate(), $0.root()] }, violations: []),
        CertificateRow(
            label: "37: leaf SHA-512", arbitraryLoads: false,
            chain: { [$0.leaf(hash: .sha512), $0.intermediate(), $0.root()] }, violations: []),
        CertificateRow(
            label: "37: intermediate SHA-1", arbitraryLoads: false,
            chain: { [$0.leaf(), $0.intermediate(hash: .sha1), $0.root()] }, violations: ["sig_hash_chain"]),
        CertificateRow(
            label: "37: intermediate SHA-1 under AAL (trust)", arbitraryLoads: true,
            chain: { [$0.leaf(), $0.intermediate(hash: .sha1), $0.root()] }, violations: ["sig_hash_chain"]),
        CertificateRow(
            label: "37: root self-signed with SHA-1", arbitraryLoads: false,
            chain: { [$0.leaf(), $0.intermediate(), $0.root(hash: .sha1)] }, violations: []),
        CertificateRow(
            label: "37: root self-signed with MD5", arbitraryLoads: false,
            chain: { [$0.leaf(), $0.intermediate(), $0.root(hash: .md5)] }, violations: []),
        CertificateRow(
            label: "37: leaf and intermediate SHA-1", arbitraryLoads: false,
            chain: { [$0.leaf(hash: .sha1), $0.intermediate(hash: .sha1), $0.root()] },
            violations: ["sig_hash_leaf", "sig_hash_chain"]),
    ]

    @Test("Items 36–37: key sizes and signature hashes", arguments: keyAndHashRows)
    func keysAndHashes(row: CertificateRow) throws {
        let policy = try policy(row.arbitraryLoads ? ATSSpec.arbitraryLoadsYES : "")
        let result = try verdict(policy, observed: connection(chain: row.chain(ATSSpecBuilder())))
        #expect(violationNames(result) == row.violations)
        // -1200 where ATS applies, -1202 (plain trust) where it does not (docs/ats-rules.md, "Violations").
        for violation in result.violations {
            #expect(violation.error.nsurl == (row.arbitraryLoads ? -1202 : -1200), "\(violation.kind.name)")
        }
    }

    /// ⚠️ Apple's NSExceptionRequiresForwardSecrecy page says FS=NO "also removes the key length check"; the
    /// code does not, and system trust enforces RSA ≥ 2048 since iOS 13 anyway (HT210176), so a weak key still
    /// fails.
    @Test("⚠️ Item 36: NSExceptionRequiresForwardSecrecy=NO does not waive the key size")
    func forwardSecrecyOffKeepsKeySize() throws {
        let policy = try policy(ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.forwardSecrecyNO)))
        let weak = connection(version: .tls12, suite: 0x009C, chain: [leaf(keyBits: 1024), intermediate(), root()])
        #expect(violationNames(try verdict(policy, observed: weak)) == ["key_size"])
    }

    // MARK: - Item 38: trust, dates, names

    struct TrustRow: ATSSpecRow {
        let label: String
        let connection: @Sendable (ATSSpecBuilder) -> ObservedConnection
        let violation: String?
        /// The NSURLErrorDomain codes reported for the violation (docs/ats-rules.md, "Violations").
        let nsurlCodes: Set<Int>
    }

    static let trustRows: [TrustRow] = [
        TrustRow(
            label: "38: self-signed leaf",
            connection: {
                $0.connection(chain: [$0.leaf(selfSigned: true)], trust: .untrusted(reason: "self-signed certificate"))
            },
            violation: "untrusted_chain", nsurlCodes: [-1202, -1203]),
        TrustRow(
            label: "38: unknown root",
            connection: { $0.connection(trust: .untrusted(reason: "unable to get local issuer certificate")) },
            violation: "untrusted_chain", nsurlCodes: [-1202, -1203]),
        TrustRow(
            label: "38: user-trusted root (no SCTs needed)",
            connection: { $0.connection(trust: .userInstalledRoot, embeddedSCTs: 0) },
            violation: nil, nsurlCodes: []),
        TrustRow(
            label: "38: expired leaf",
            connection: { $0.connection(leaf: $0.leaf(notBefore: ATSSpec.now - 91 * ATSSpec.day, lifetimeDays: 90)) },
            violation: "expired", nsurlCodes: [-1201, -1202, -1200]),
        TrustRow(
            label: "38: expired intermediate",
            connection: {
                $0.connection(chain: [$0.leaf(), $0.intermediate(notAfter: ATSSpec.now - ATSSpec.day), $0.root()])
            },
            violation: "expired", nsurlCodes: [-1201, -1202, -1200]),
        TrustRow(
            label: "38: not-yet-valid leaf",
            connection: { $0.connection(leaf: $0.leaf(notBefore: ATSSpec.now + ATSSpec.day, lifetimeDays: 90)) },
            violation: "not_yet_valid", nsurlCodes: [-1204]),
        TrustRow(
            label: "38: name only in the CN", connection: { $0.connection(leaf: $0.leaf(dnsNames: [])) },
            violation: "name_mismatch", nsurlCodes: [-1200, -1202]),
        TrustRow(
            label: "38: SAN names another host",
            connection: { $0.connection(leaf: $0.leaf(dnsNames: ["other.example.net"])) },
            violation: "name_mismatch", nsurlCodes: [-1200, -1202]),
        TrustRow(
            label: "38: SAN matches case-insensitively",
            connection: { $0.connection(leaf: $0.leaf(dnsNames: ["EXAMPLE.com"])) },
            violation: nil, nsurlCodes: []),
    ]

    @Test("Item 38: each trust failure has its own reason", arguments: trustRows)
    func trust(row: TrustRow) throws {
        let result = try verdict(try policy(""), observed: row.connection(ATSSpecBuilder()))
        if let expected = row.violation {
            let violation = try #require(
                result.violations.first { $0.kind.name == expected }, "\(violationNames(result))")
            #expect(row.nsurlCodes.contains(violation.error.nsurl), "\(violation.error)")
            #expect(violationNames(result) == [expected])
        } else {
            #expect(result.isCompliant, "\(violationNames(result))")
        }
    }

    @Test("Item 38: an IP host matches an IP address in the subjectAltName")
    func ipAddressName() throws {
        let policy = try policy(ATSSpec.exceptionDomains(ATSSpec.domain("203.0.113.5")))
        #expect(try verdict(policy, host: "203.0.113.5", observed: connection(host: "203.0.113.5")).isCompliant)
    }

    // MARK: - Item 39: validity length (and the serverAuth EKU)

    struct ValidityRow: ATSSpecRow {
        let label: String
        let trust: ChainTrust
        let notBefore: Int64
        let lifetime: Int64
        let tooLong: Bool
    }

    private static func date(_ year: Int, _ month: Int, _ day: Int) -> Int64 {
        DateFormat.seconds(year: year, month: month, day: day)
    }

    static let validityRows: [ValidityRow] = [
        ValidityRow(
            label: "39: system root, issued 2021, 399 days", trust: .systemRoot, notBefore: date(2021, 1, 1),
            lifetime: 399 * ATSSpec.day, tooLong: true),
        ValidityRow(
            label: "39: system root, issued 2021, 398 days (inclusive)", trust: .systemRoot,
            notBefore: date(2021, 1, 1), lifetime: 398 * ATSSpec.day - 1, tooLong: false),
        ValidityRow(
            label: "39: system root, issued 2020-09-01, 399 days", trust: .systemRoot, notBefore: date(2020, 9, 1),
            lifetime: 399 * ATSSpec.day, tooLong: true),
        ValidityRow(
            label: "39: system root, issued 2020-08-31, 399 days (825 rule)", trust: .systemRoot,
            notBefore: date(2020, 8, 31), lifetime: 399 * ATSSpec.day, tooLong: false),
        ValidityRow(
            label: "39: system root, issued 2019, 826 days", trust: .systemRoot, notBefore: date(2019, 1, 1),
            lifetime: 826 * ATSSpec.day, tooLong: true),
        ValidityRow(
            label: "39: system root, issued 2019, 800 days", trust: .systemRoot, notBefore: date(2019, 1, 1),
            lifetime: 800 * ATSSpec.day, tooLong: false),
        ValidityRow(
            label: "39: system root, issued 2018-03-01, 826 days", trust: .systemRoot, notBefore: date(2018, 3, 1),
            lifetime: 826 * ATSSpec.day, tooLong: true),
        ValidityRow(
            label: "39: system root, issued 2017, 1000 days (no limit yet)", trust: .systemRoot,
            notBefore: date(2017, 6, 1), lifetime: 1000 * ATSSpec.day, tooLong: false),
        ValidityRow(
            label: "39: user root, issued 2021, 826 days", trust: .userInstalledRoot, notBefore: date(2021, 1, 1),
            lifetime: 826 * ATSSpec.day, tooLong: true),
        ValidityRow(
            label: "39: user root, issued 2021, 800 days", trust: .userInstalledRoot, notBefore: date(2021, 1, 1),
            lifetime: 800 * ATSSpec.day, tooLong: false),
        ValidityRow(
            label: "39: user root, issued 2021, 399 days (398 is for system roots)", trust: .userInstalledRoot,
            notBefore: date(2021, 1, 1), lifetime: 399 * ATSSpec.day, tooLong: false),
        ValidityRow(
            label: "39: user root, issued 2019-07-01, 826 days", trust: .userInstalledRoot, notBefore: date(2019, 7, 1),
            lifetime: 826 * ATSSpec.day, tooLong: true),
        ValidityRow(
            label: "39: user root, issued 2019-06-30, 900 days (no limit yet)", trust: .userInstalledRoot,
            notBefore: date(2019, 6, 30), lifetime: 900 * ATSSpec.day, tooLong: false),
        // notAfter − notBefore compared with `>` (SecPolicy.c): a leaf of exactly the cap passes; the 825-day cap
        // has an hour's grace (DefaultTrustRuleTests has every edge).
        ValidityRow(
            label: "§3.1a: system root, notAfter − notBefore = exactly 398 days", trust: .systemRoot,
            notBefore: date(2021, 1, 1), lifetime: 398 * ATSSpec.day, tooLong: false),
        ValidityRow(
            label: "§3.1a: user root, notAfter − notBefore = exactly 825 days", trust: .userInstalledRoot,
            notBefore: date(2021, 1, 1), lifetime: 825 * ATSSpec.day, tooLong: false),
        ValidityRow(
            label: "§3.1a: user root, 825 days and 2 hours", trust: .userInstalledRoot,
            notBefore: date(2021, 1, 1), lifetime: 825 * ATSSpec.day + 7200, tooLong: true),
    ]

    @Test("Item 39: leaf validity length by root kind and issue date", arguments: validityRows)
    func validityLength(row: ValidityRow) throws {
        let certificate = leaf(notBefore: row.notBefore, notAfter: row.notBefore + row.lifetime)
        // Two delivered SCTs satisfy CT for any lifetime, so only the length can fail.
        let observed = connection(
            leaf: certificate, trust: row.trust, embeddedSCTs: 0, deliveredSCTs: 2, at: row.notBefore + 10 * ATSSpec.day
        )
        let result = try verdict(try policy(""), observed: observed)
        #expect(violationNames(result) == (row.tooLong ? ["validity_too_long"] : []))
    }

    struct EKURow: ATSSpecRow {
        let label: String
        let notBefore: Int64
        let eku: [CertificateFacts.ExtendedKeyUsage]?
        let arbitraryLoads: Bool
        let violation: Bool
    }

    static let ekuRows: [EKURow] = [
        EKURow(
            label: "serverAuth", notBefore: ATSSpec.now - 30 * ATSSpec.day, eku: [.serverAuth], arbitraryLoads: false,
            violation: false),
        EKURow(
            label: "serverAuth + clientAuth", notBefore: ATSSpec.now - 30 * ATSSpec.day,
            eku: [.clientAuth, .serverAuth], arbitraryLoads: false, violation: false),
        EKURow(
            label: "clientAuth only", notBefore: ATSSpec.now - 30 * ATSSpec.day, eku: [.clientAuth],
            arbitraryLoads: false, violation: true),
        EKURow(
            label: "codeSigning OID only", notBefore: ATSSpec.now - 30 * ATSSpec.day,
            eku: [.other("1.3.6.1.5.5.7.3.3")], arbitraryLoads: false, violation: true),
        EKURow(
            label: "no EKU extension", notBefore: ATSSpec.now - 30 * ATSSpec.day, eku: nil, arbitraryLoads: false,
            violation: true),
        EKURow(
            label: "clientAuth only, under AAL (trust rule)", notBefore: ATSSpec.now - 30 * ATSSpec.day,
            eku: [.clientAuth], arbitraryLoads: true, violation: true),
        EKURow(
            label: "clientAuth only, issued 2019-06-01 (under a system root the rule has no date)",
            notBefore: date(2019, 6, 1), eku: [.clientAuth], arbitraryLoads: false, violation: true),
        EKURow(
            label: "no EKU extension, issued 2019-06-01 (under a system root the rule has no date)",
            notBefore: date(2019, 6, 1), eku: nil, arbitraryLoads: false, violation: true),
    ]

    @Test("§3.1a: under a system root the leaf needs the serverAuth EKU", arguments: ekuRows)
    func extendedKeyUsage(row: EKURow) throws {
        let certificate = leaf(notBefore: row.notBefore, lifetimeDays: 365, eku: row.eku)
        let observed = connection(
            leaf: certificate, embeddedSCTs: 0, deliveredSCTs: 2, at: row.notBefore + 10 * ATSSpec.day)
        let result = try verdict(try policy(row.arbitraryLoads ? ATSSpec.arbitraryLoadsYES : ""), observed: observed)
        #expect(violationNames(result) == (row.violation ? ["no_serverauth_eku"] : []))
    }

    // MARK: - Item 40: Certificate Transparency

    struct CTRow: ATSSpecRow {
        let label: String
        let trust: ChainTrust
        let notBefore: Int64
        let lifetimeDays: Int64
        let embedded: Int
        let delivered: Int
        let enforcement: CTEnforcement
        let violations: [String]
    }

    static let recent = ATSSpec.now - 30 * ATSSpec.day
    static let ctRows: [CTRow] = [
        CTRow(
            label: "40: system root, 1 embedded SCT", trust: .systemRoot, notBefore: recent, lifetimeDays: 90,
            embedded: 1, delivered: 0, enforcement: .apple, violations: ["ct"]),
        CTRow(
            label: "40: system root, no SCTs", trust: .systemRoot, notBefore: recent, lifetimeDays: 90, embedded: 0,
            delivered: 0, enforcement: .apple, violations: ["ct"]),
        CTRow(
            label: "40: system root, 1 delivered SCT", trust: .systemRoot, notBefore: recent, lifetimeDays: 90,
            embedded: 0, delivered: 1, enforcement: .apple, violations: ["ct"]),
        CTRow(
            label: "40: system root, 1 embedded + 1 delivered", trust: .systemRoot, notBefore: recent, lifetimeDays: 90,
            embedded: 1, delivered: 1, enforcement: .apple, violations: []),
        CTRow(
            label: "40: system root, 2 delivered", trust: .systemRoot, notBefore: recent, lifetimeDays: 90, embedded: 0,
            delivered: 2, enforcement: .apple, violations: []),
        CTRow(
            label: "40: system root, 2 embedded, 90-day leaf", trust: .systemRoot, notBefore: recent, lifetimeDays: 90,
            embedded: 2, delivered: 0, enforcement: .apple, violations: []),
        CTRow(
            label: "40: system root, 2 embedded, 200-day leaf (needs 3)", trust: .systemRoot, notBefore: recent,
            lifetimeDays: 200, embedded: 2, delivered: 0, enforcement: .apple, violations: ["ct"]),
        CTRow(
            label: "40: system root, 3 embedded, 200-day leaf", trust: .systemRoot, notBefore: recent,
            lifetimeDays: 200, embedded: 3, delivered: 0, enforcement: .apple, violations: []),
        CTRow(
            label: "40: user-installed root, 1 SCT", trust: .userInstalledRoot, notBefore: recent, lifetimeDays: 90,
            embedded: 1, delivered: 0, enforcement: .apple, violations: []),
        CTRow(
            label: "40: user-installed root, no SCTs", trust: .userInstalledRoot, notBefore: recent, lifetimeDays: 90,
            embedded: 0, delivered: 0, enforcement: .apple, violations: []),
        CTRow(
            label: "40: untrusted chain, no SCTs: only untrusted_chain", trust: .untrusted(reason: "unknown issuer"),
            notBefore: recent, lifetimeDays: 90, embedded: 0, delivered: 0, enforcement: .apple,
            violations: ["untrusted_chain"]),
        CTRow(
            label: "40: issued 2018-10-16 00:00 UTC, 1 SCT", trust: .systemRoot, notBefore: date(2018, 10, 16),
            lifetimeDays: 365, embedded: 1, delivered: 0, enforcement: .apple, violations: ["ct"]),
        CTRow(
            label: "40: issued 2018-10-15, no SCTs (CT not required)", trust: .systemRoot,
            notBefore: date(2018, 10, 15), lifetimeDays: 365, embedded: 0, delivered: 0, enforcement: .apple,
            violations: []),
        CTRow(
            label: "40: issued 2018-10-15 23:59:59, no SCTs", trust: .systemRoot, notBefore: date(2018, 10, 16) - 1,
            lifetimeDays: 365, embedded: 0, delivered: 0, enforcement: .apple, violations: []),
        CTRow(
            label: "40: ct = off, system root, no SCTs", trust: .systemRoot, notBefore: recent, lifetimeDays: 90,
            embedded: 0, delivered: 0, enforcement: .off, violations: []),
    ]

    @Test("Item 40: Certificate Transparency", arguments: ctRows)
    func certificateTransparency(row: CTRow) throws {
        var ctSettings = settings()
        ctSettings.certificateTransparency = row.enforcement
        let policy = try policy("", settings: ctSettings)
        let observed = connection(
            leaf: leaf(notBefore: row.notBefore, lifetimeDays: row.lifetimeDays), trust: row.trust,
            embeddedSCTs: row.embedded, deliveredSCTs: row.delivered, at: row.notBefore + 20 * ATSSpec.day)
        #expect(violationNames(try verdict(policy, observed: observed)) == row.violations)
    }

    @Test("§3.5: an expired leaf is not also reported for CT")
    func expiredLeafSkipsCT() throws {
        let observed = connection(
            leaf: leaf(notBefore: ATSSpec.now - 100 * ATSSpec.day, lifetimeDays: 90), embeddedSCTs: 0)
        #expect(violationNames(try verdict(try policy(""), observed: observed)) == ["expired"])
    }

    // MARK: - Item 41: each redirect hop is judged on its own

    @Test("Item 41: https → http redirect: the second hop is its own load")
    func redirectHops() throws {
        let policy = try policy(ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.insecureYES)))
        // Hop 1: https://example.com passes.
        #expect(try verdict(policy, host: "example.com").isCompliant)
        // Hop 2: http://www.example.com is not covered (no NSIncludesSubdomains): -1022.
        let second = try verdict(policy, host: "www.example.com", scheme: .http)
        #expect(violationNames(second) == ["cleartext"])
        #expect(second.error?.nsurl == -1022)
        // The same redirect to http://example.com itself is allowed.
        #expect(try verdict(policy, host: "example.com", scheme: .http).isCompliant)
        // And an https hop to www.example.com gets full ATS on its own.
        #expect(try verdict(policy, host: "www.example.com", observed: connection(host: "www.example.com")).isCompliant)
        #expect(
            violationNames(
                try verdict(policy, host: "www.example.com", observed: tls12(0x009C, host: "www.example.com")))
                == ["cipher_not_fs"])
    }
}
