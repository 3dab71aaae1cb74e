import ATSPolicy
import Testing
import TextFormats

/// Default trust as Apple's trust code applies it, rule by rule and by kind of anchor (Apple open source,
/// Security-61901: SecPolicy.c `set_ssl_validity_periods`, SecPolicyServer.c, SecPolicyLeafCallbacks.c
/// `SecDNSMatch` and the EKU checks, CertificateTransparency.m; docs/ats-rules.md, "Default trust"). Each
/// table's rows sit on both sides of the rule's edge. The end-to-end tests make real certificates for the
/// same rules (DiagnoseChainTests).
@Suite("Default trust: Apple's trust code to the letter")
struct DefaultTrustRuleTests: ATSSpecFixture {
    static let day = ATSSpec.day
    static let hour: Int64 = 3600
    static func date(_ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0) -> Int64 {
        DateFormat.seconds(year: year, month: month, day: day, hour: hour)
    }

    /// Only the named violation: CT and the other rules are kept out of each row by its SCTs and dates.
    func names(_ verdict: Verdict, among kinds: Set<String>) -> [String] {
        violationNames(verdict).filter(kinds.contains)
    }

    // MARK: - Validity caps

    struct CapRow: ATSSpecRow {
        let label: String
        let anchor: TrustAnchorKind
        let notBefore: Int64
        let period: Int64
        let tooLong: Bool
    }

    static let capRows: [CapRow] = [
        CapRow(
            label: "system, exactly 398 days", anchor: .system, notBefore: date(2025, 1, 1), period: 398 * day,
            tooLong: false),
        CapRow(
            label: "system, 398 days + 1 s", anchor: .system, notBefore: date(2025, 1, 1), period: 398 * day + 1,
            tooLong: true),
        CapRow(
            label: "system, 398 days + 1 h (no grace under the 398-day cap)", anchor: .system,
            notBefore: date(2025, 1, 1), period: 398 * day + hour, tooLong: true),
        CapRow(
            label: "Apple's own root, 398 days + 1 s", anchor: .appleSystem, notBefore: date(2025, 1, 1),
            period: 398 * day + 1, tooLong: true),
        CapRow(
            label: "system, issued 2019, 825 days + 1 h", anchor: .system, notBefore: date(2019, 1, 1),
            period: 825 * day + hour, tooLong: false),
        CapRow(
            label: "system, issued 2019, 825 days + 1 h + 1 s", anchor: .system, notBefore: date(2019, 1, 1),
            period: 825 * day + hour + 1, tooLong: true),
        CapRow(
            label: "system, issued 2020-08-31, 825 days", anchor: .system, notBefore: date(2020, 8, 31),
            period: 825 * day, tooLong: false),
        CapRow(
            label: "system, issued 2018-02-28, 1000 days (no cap yet)", anchor: .system, notBefore: date(2018, 2, 28),
            period: 1000 * day, tooLong: false),
        CapRow(
            label: "user, exactly 825 days", anchor: .user, notBefore: date(2025, 1, 1), period: 825 * day,
            tooLong: false),
        CapRow(
            label: "user, 825 days + 1 h", anchor: .user, notBefore: date(2025, 1, 1), period: 825 * day + hour,
            tooLong: false),
        CapRow(
            label: "user, 825 days + 1 h + 1 s", anchor: .user, notBefore: date(2025, 1, 1),
            period: 825 * day + hour + 1, tooLong: true),
        CapRow(
            label: "user, 399 days (398 is for system roots)", anchor: .user, notBefore: date(2025, 1, 1),
            period: 399 * day, tooLong: false),
        CapRow(
            label: "user, issued 2019-06-30T23:00Z, 900 days (not after the date)", anchor: .user,
            notBefore: date(2019, 6, 30, 23), period: 900 * day, tooLong: false),
        CapRow(
            label: "user, issued 2019-06-30T23:00:01Z, 900 days", anchor: .user, notBefore: date(2019, 6, 30, 23) + 1,
            period: 900 * day, tooLong: true),
        CapRow(
            label: "app, 825 days + 1 h", anchor: .app, notBefore: date(2025, 1, 1), period: 825 * day + hour,
            tooLong: false),
        CapRow(
            label: "app, 825 days + 1 h + 1 s", anchor: .app, notBefore: date(2025, 1, 1), period: 825 * day + hour + 1,
            tooLong: true),
    ]

    @Test("the leaf's validity cap: notAfter − notBefore > max, by anchor and issue date", arguments: capRows)
    func validityCap(row: CapRow) throws {
        let leaf = leaf(notBefore: row.notBefore, notAfter: row.notBefore + row.period)
        let observed = connection(
            leaf: leaf, trust: .anchored(row.anchor), embeddedSCTs: 0, deliveredSCTs: 2,
            at: row.notBefore + 10 * Self.day)
        let result = try verdict(try policy(""), observed: observed)
        #expect(violationNames(result) == (row.tooLong ? ["validity_too_long"] : []))
    }

    @Test("no cap for a leaf that is itself the anchor", arguments: [TrustAnchorKind.user, .app])
    func directlyTrustedLeafHasNoCap(anchor: TrustAnchorKind) throws {
        let notBefore = Self.date(2025, 1, 1)
        let leaf = leaf(notBefore: notBefore, notAfter: notBefore + 3650 * Self.day, selfSigned: true)
        let observed = connection(chain: [leaf], trust: .anchored(anchor), at: notBefore + Self.day)
        #expect(violationNames(try verdict(try policy(""), observed: observed)) == [])
    }

    // MARK: - EKU

    struct EKURow: ATSSpecRow {
        let label: String
        let anchor: TrustAnchorKind
        let leafEKU: [CertificateFacts.ExtendedKeyUsage]?
        var notBefore: Int64 = ATSSpec.now - 30 * ATSSpec.day
        var intermediateEKU: [CertificateFacts.ExtendedKeyUsage]? = nil
        let fails: Bool
    }

    static let ekuRows: [EKURow] = [
        // Under a system root: serverAuth on the leaf itself, whatever the date; anyEKU is not enough.
        EKURow(label: "system, serverAuth", anchor: .system, leafEKU: [.serverAuth], fails: false),
        EKURow(label: "system, no EKU", anchor: .system, leafEKU: nil, fails: true),
        EKURow(label: "system, anyEKU", anchor: .system, leafEKU: [.any], fails: true),
        EKURow(label: "system, clientAuth only", anchor: .system, leafEKU: [.clientAuth], fails: true),
        EKURow(
            label: "system, no EKU, issued 2019-01-01", anchor: .system, leafEKU: nil, notBefore: date(2019, 1, 1),
            fails: true),
        EKURow(
            label: "system, Server Gated Crypto only (loose passes, strict does not)", anchor: .system,
            leafEKU: [.serverGatedCrypto], fails: true),
        EKURow(
            label: "system, anyEKU intermediate", anchor: .system, leafEKU: [.serverAuth], intermediateEKU: [.any],
            fails: false),
        EKURow(
            label: "system, clientAuth+serverAuth intermediate", anchor: .system, leafEKU: [.serverAuth],
            intermediateEKU: [.clientAuth, .serverAuth], fails: false),
        EKURow(
            label: "system, SGC-only intermediate (strict: serverAuth or anyEKU)", anchor: .system,
            leafEKU: [.serverAuth], intermediateEKU: [.serverGatedCrypto], fails: true),
        EKURow(
            label: "system, S/MIME-only intermediate", anchor: .system, leafEKU: [.serverAuth],
            intermediateEKU: [.emailProtection], fails: true),
        // Under a user root the strict check is skipped; the loose one holds.
        EKURow(label: "user, no EKU", anchor: .user, leafEKU: nil, fails: false),
        EKURow(label: "user, anyEKU", anchor: .user, leafEKU: [.any], fails: false),
        EKURow(label: "user, Server Gated Crypto only", anchor: .user, leafEKU: [.serverGatedCrypto], fails: false),
        EKURow(label: "user, clientAuth only", anchor: .user, leafEKU: [.clientAuth], fails: true),
        EKURow(label: "user, codeSigning only", anchor: .user, leafEKU: [.other("1.3.6.1.5.5.7.3.3")], fails: true),
        EKURow(
            label: "user, S/MIME-only intermediate", anchor: .user, leafEKU: nil, intermediateEKU: [.emailProtection],
            fails: true),
        EKURow(label: "user, anyEKU intermediate", anchor: .user, leafEKU: nil, intermediateEKU: [.any], fails: false),
        // Under an app anchor: serverAuth for leaves issued after 2019-06-30T23:00Z; anyEKU is not enough.
        EKURow(label: "app, serverAuth", anchor: .app, leafEKU: [.serverAuth], fails: false),
        EKURow(label: "app, no EKU", anchor: .app, leafEKU: nil, fails: true),
        EKURow(label: "app, anyEKU", anchor: .app, leafEKU: [.any], fails: true),
        EKURow(label: "app, clientAuth only", anchor: .app, leafEKU: [.clientAuth], fails: true),
        EKURow(
            label: "app, no EKU, issued 2019-06-30T23:00Z", anchor: .app, leafEKU: nil,
            notBefore: date(2019, 6, 30, 23), fails: false),
        EKURow(
            label: "app, anyEKU, issued 2019-06-01", anchor: .app, leafEKU: [.any], notBefore: date(2019, 6, 1),
            fails: false),
        EKURow(
            label: "app, clientAuth only, issued 2019-06-01 (the loose check has no date)", anchor: .app,
            leafEKU: [.clientAuth], notBefore: date(2019, 6, 1), fails: true),
        EKURow(
            label: "app, S/MIME-only intermediate", anchor: .app, leafEKU: [.serverAuth],
            intermediateEKU: [.emailProtection], fails: true),
    ]

    @Test("the serverAuth EKU by kind of anchor, and the loose check under every anchor", arguments: ekuRows)
    func extendedKeyUsage(row: EKURow) throws {
        let leaf = leaf(notBefore: row.notBefore, lifetimeDays: 90, eku: row.leafEKU)
        var intermediate = intermediate()
        intermediate.extendedKeyUsage = row.intermediateEKU
        let observed = connection(
            chain: [leaf, intermediate, root()], trust: .anchored(row.anchor), embeddedSCTs: 3,
            at: row.notBefore + 10 * Self.day)
        let result = try verdict(try policy(""), observed: observed)
        #expect(violationNames(result) == (row.fails ? ["no_serverauth_eku"] : []))
        if row.fails, row.intermediateEKU != nil {
            #expect(result.violations.first?.explanation.contains("intermediate") == true)
        }
    }

    @Test(
        "a leaf trusted directly still gets the loose EKU check: clientAuth alone fails, no EKU passes",
        arguments: [TrustAnchorKind.user, .app])
    func looseCheckOnDirectlyTrustedLeaf(anchor: TrustAnchorKind) throws {
        let old = Self.date(2019, 1, 1)
        let clientOnly = leaf(notBefore: old, lifetimeDays: 3000, eku: [.clientAuth], selfSigned: true)
        let observed = connection(chain: [clientOnly], trust: .anchored(anchor), at: old + Self.day)
        #expect(violationNames(try verdict(try policy(""), observed: observed)) == ["no_serverauth_eku"])
        let bare = leaf(notBefore: old, lifetimeDays: 3000, eku: nil, selfSigned: true)
        let passing = connection(chain: [bare], trust: .anchored(anchor), at: old + Self.day)
        #expect(violationNames(try verdict(try policy(""), observed: passing)) == [])
    }

    @Test("an untrusted chain still gets the loose EKU check: a clientAuth-only leaf")
    func looseCheckWithoutAnchor() throws {
        let observed = connection(
            leaf: leaf(eku: [.clientAuth]), trust: .untrusted(reason: "unable to get local issuer certificate"))
        #expect(
            violationNames(try verdict(try policy(""), observed: observed)) == ["untrusted_chain", "no_serverauth_eku"])
    }

    // MARK: - Key size and hash: what is exempt

    struct ExemptionRow: ATSSpecRow {
        let label: String
        let chain: @Sendable (ATSSpecBuilder) -> [CertificateFacts]
        let trust: ChainTrust
        let violations: [String]
    }

    static let exemptionRows: [ExemptionRow] = [
        ExemptionRow(
            label: "self-signed SHA-1 leaf trusted directly by the user",
            chain: { [$0.leaf(hash: .sha1, selfSigned: true)] }, trust: .anchored(.user), violations: []),
        ExemptionRow(
            label: "self-signed SHA-1 leaf trusted directly by the app",
            chain: { [$0.leaf(hash: .sha1, selfSigned: true)] }, trust: .anchored(.app), violations: []),
        ExemptionRow(
            label: "self-signed RSA-1024 leaf trusted directly by the user",
            chain: { [$0.leaf(keyBits: 1024, selfSigned: true)] }, trust: .anchored(.user), violations: []),
        ExemptionRow(
            label: "self-signed RSA-1024 leaf trusted directly by the app",
            chain: { [$0.leaf(keyBits: 1024, selfSigned: true)] }, trust: .anchored(.app), violations: []),
        ExemptionRow(
            label: "self-signed SHA-1 leaf, untrusted: the trust failure alone",
            chain: { [$0.leaf(hash: .sha1, selfSigned: true)] },
            trust: .untrusted(reason: "self-signed certificate"), violations: ["untrusted_chain"]),
        ExemptionRow(
            label: "RSA-1024 leaf under a user root (not the anchor itself)",
            chain: { [$0.leaf(keyBits: 1024), $0.intermediate(), $0.root()] }, trust: .anchored(.user),
            violations: ["key_size"]),
        ExemptionRow(
            label: "SHA-1 leaf under a user root (not self-signed)",
            chain: { [$0.leaf(hash: .sha1), $0.intermediate(), $0.root()] }, trust: .anchored(.user),
            violations: ["sig_hash_leaf"]),
        ExemptionRow(
            label: "SHA-1 intermediate that the user installed as the anchor",
            chain: { [$0.leaf(), $0.intermediate(hash: .sha1)] }, trust: .anchored(.user), violations: []),
        ExemptionRow(
            label: "SHA-1 intermediate that the app set as its anchor",
            chain: { [$0.leaf(), $0.intermediate(hash: .sha1)] }, trust: .anchored(.app), violations: []),
        ExemptionRow(
            label: "SHA-1 intermediate under a user root",
            chain: { [$0.leaf(), $0.intermediate(hash: .sha1), $0.root()] }, trust: .anchored(.user),
            violations: ["sig_hash_chain"]),
        ExemptionRow(
            label: "RSA-1024 intermediate that the user installed as the anchor (the anchor's key counts)",
            chain: { [$0.leaf(), $0.intermediate(keyBits: 1024)] }, trust: .anchored(.user),
            violations: ["key_size"]),
        ExemptionRow(
            label: "RSA-1024 root (the anchor's key counts)",
            chain: { [$0.leaf(), $0.intermediate(), $0.root(keyBits: 1024)] }, trust: .anchored(.system),
            violations: ["key_size"]),
    ]

    @Test("key size and hash: a directly trusted leaf and installed anchors are exempt", arguments: exemptionRows)
    func exemptions(row: ExemptionRow) throws {
        let observed = connection(chain: row.chain(ATSSpecBuilder()), trust: row.trust)
        #expect(violationNames(try verdict(try policy(""), observed: observed)) == row.violations)
    }

    // MARK: - Names

    struct NameRow: ATSSpecRow {
        let label: String
        let host: String
        let names: [String]
        var overPublicSuffix: Set<String> = []
        let matches: Bool
    }

    static let nameRows: [NameRow] = [
        NameRow(
            label: "*.co.uk over the public suffix co.uk", host: "apple.co.uk", names: ["*.co.uk"],
            overPublicSuffix: ["*.co.uk"], matches: false),
        NameRow(
            label: "*.googleapis.com (a private-section suffix)", host: "storage.googleapis.com",
            names: ["*.googleapis.com"], matches: true),
        NameRow(label: "*.example.co.uk", host: "www.example.co.uk", names: ["*.example.co.uk"], matches: true),
        NameRow(label: "a trailing dot in the SAN", host: "test.apple.com", names: ["test.apple.com."], matches: false),
        NameRow(label: "a trailing dot on the host", host: "test.apple.com.", names: ["test.apple.com"], matches: true),
        NameRow(label: "a trailing dot on both", host: "test.apple.com.", names: ["test.apple.com."], matches: false),
        NameRow(
            label: "a wildcard with a trailing dot in the SAN", host: "www.apple.com", names: ["*.apple.com."],
            matches: false),
    ]

    @Test("names as SecDNSMatch matches them", arguments: nameRows)
    func names(row: NameRow) throws {
        var leaf = leaf(dnsNames: row.names)
        leaf.wildcardsOverPublicSuffix = row.overPublicSuffix
        let observed = connection(leaf: leaf)
        let policy = try policy(ATSSpec.exceptionDomains(ATSSpec.domain(row.host)))
        let result = try verdict(policy, host: row.host, observed: observed)
        #expect(violationNames(result) == (row.matches ? [] : ["name_mismatch"]))
    }

    @Test("a near miss says why: the public suffix, or the SAN's trailing dot")
    func nearMissWords() throws {
        var wildcard = leaf(dnsNames: ["*.co.uk"])
        wildcard.wildcardsOverPublicSuffix = ["*.co.uk"]
        let policy = try policy(ATSSpec.exceptionDomains(ATSSpec.domain("apple.co.uk")))
        let overSuffix = try verdict(policy, host: "apple.co.uk", observed: connection(leaf: wildcard))
        #expect(overSuffix.violations.first?.explanation.contains("public suffix \"co.uk\"") == true)
        let plain = try self.policy("")
        let dotted = try verdict(plain, observed: connection(leaf: leaf(dnsNames: ["example.com."])))
        #expect(dotted.violations.first?.explanation.contains("trailing dot") == true)
    }

    // MARK: - Certificate Transparency

    struct CTRow: ATSSpecRow {
        let label: String
        let anchor: TrustAnchorKind
        let notBefore: Int64
        let notAfter: Int64
        let embedded: Int
        let fails: Bool
    }

    static let ctRows: [CTRow] = [
        // Before 2021-04-21: the older table, in whole months.
        CTRow(
            label: "issued 2021-04-20, 14 months, 2 embedded", anchor: .system, notBefore: date(2021, 4, 20),
            notAfter: date(2022, 6, 19), embedded: 2, fails: false),
        CTRow(
            label: "issued 2021-04-20, 15 months, 2 embedded", anchor: .system, notBefore: date(2021, 4, 20),
            notAfter: date(2022, 7, 20), embedded: 2, fails: true),
        CTRow(
            label: "issued 2021-04-20, 15 months, 3 embedded", anchor: .system, notBefore: date(2021, 4, 20),
            notAfter: date(2022, 7, 20), embedded: 3, fails: false),
        CTRow(
            label: "issued 2019-01-01, 27 months, 3 embedded", anchor: .system, notBefore: date(2019, 1, 1),
            notAfter: date(2021, 4, 1), embedded: 3, fails: false),
        CTRow(
            label: "issued 2019-01-01, 28 months, 3 embedded", anchor: .system, notBefore: date(2019, 1, 1),
            notAfter: date(2021, 5, 1), embedded: 3, fails: true),
        CTRow(
            label: "issued 2019-01-01, 39 months, 4 embedded", anchor: .system, notBefore: date(2019, 1, 1),
            notAfter: date(2022, 4, 1), embedded: 4, fails: false),
        CTRow(
            label: "issued 2019-01-01, 40 months, 4 embedded", anchor: .system, notBefore: date(2019, 1, 1),
            notAfter: date(2022, 5, 1), embedded: 4, fails: true),
        // From 2021-04-21: bands on the exclusive difference.
        CTRow(
            label: "issued 2021-04-21, 14 months, 2 embedded", anchor: .system, notBefore: date(2021, 4, 21),
            notAfter: date(2022, 6, 20), embedded: 2, fails: true),
        CTRow(
            label: "issued 2025-01-01, exactly 180 days, 2 embedded", anchor: .system, notBefore: date(2025, 1, 1),
            notAfter: date(2025, 1, 1) + 180 * day, embedded: 2, fails: false),
        CTRow(
            label: "issued 2025-01-01, 180 days + 1 s, 2 embedded", anchor: .system, notBefore: date(2025, 1, 1),
            notAfter: date(2025, 1, 1) + 180 * day + 1, embedded: 2, fails: true),
        CTRow(
            label: "issued 2025-01-01, 180 days + 1 s, 3 embedded", anchor: .system, notBefore: date(2025, 1, 1),
            notAfter: date(2025, 1, 1) + 180 * day + 1, embedded: 3, fails: false),
        // Apple's own roots, user and app anchors are exempt.
        CTRow(
            label: "Apple's own root, no SCTs", anchor: .appleSystem, notBefore: date(2025, 1, 1),
            notAfter: date(2025, 4, 1), embedded: 0, fails: false),
        CTRow(
            label: "user root, no SCTs", anchor: .user, notBefore: date(2025, 1, 1), notAfter: date(2025, 4, 1),
            embedded: 0, fails: false),
        CTRow(
            label: "app anchor, no SCTs", anchor: .app, notBefore: date(2025, 1, 1), notAfter: date(2025, 4, 1),
            embedded: 0, fails: false),
        CTRow(
            label: "system root, no SCTs", anchor: .system, notBefore: date(2025, 1, 1), notAfter: date(2025, 4, 1),
            embedded: 0, fails: true),
    ]

    @Test("CT: the older table before 2021-04-21, the current bands after, and who is exempt", arguments: ctRows)
    func certificateTransparency(row: CTRow) throws {
        let leaf = leaf(notBefore: row.notBefore, notAfter: row.notAfter)
        let observed = connection(
            leaf: leaf, trust: .anchored(row.anchor), embeddedSCTs: row.embedded, deliveredSCTs: 0,
            at: row.notBefore + Self.day)
        let result = try verdict(try policy(""), observed: observed)
        #expect(names(result, among: ["ct"]) == (row.fails ? ["ct"] : []))
    }

    @Test("the JSON names of each kind of anchor")
    func anchorNames() {
        #expect(ChainTrust.anchored(.system).name == "system_root")
        #expect(ChainTrust.anchored(.appleSystem).name == "apple_root")
        #expect(ChainTrust.anchored(.user).name == "user_installed_root")
        #expect(ChainTrust.anchored(.app).name == "app_anchor")
    }

    @Test(
        "whole months between two dates",
        arguments: [
            (date(2021, 1, 31), date(2021, 2, 28), 0), (date(2021, 1, 31), date(2021, 3, 1), 1),
            (date(2021, 4, 20), date(2022, 7, 19), 14), (date(2021, 4, 20), date(2022, 7, 20), 15),
            (date(2021, 4, 20, 12), date(2022, 7, 20, 11), 14),
        ])
    func fullMonths(start: Int64, end: Int64, months: Int) {
        #expect(DateFormat.fullMonths(from: start, to: end) == months)
    }
}
