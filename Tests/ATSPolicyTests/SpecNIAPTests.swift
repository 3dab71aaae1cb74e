import ATSPolicy
import Testing

/// The NIAP FCP_v2.1 package, cases Item 49–50 (Apple: NSRequiresNIAPTLSPackageVersion,
/// NSExceptionRequiresNIAPTLSPackageVersion; docs/ats-rules.md, "The decisions": the NIAP keys are honoured on the
/// ios26 profile only).
@Suite("Spec §7.49–50: NIAP TLS package")
struct SpecNIAPTests: ATSSpecFixture {
    static func global(_ value: String) -> String {
        "<key>NSRequiresNIAPTLSPackageVersion</key><string>\(value)</string>"
    }
    static func perDomain(_ value: String) -> String {
        "<key>NSExceptionRequiresNIAPTLSPackageVersion</key><string>\(value)</string>"
    }

    struct Row: ATSSpecRow {
        let label: String
        let xml: String
        let os: OSProfile
        let version: TLSVersion
        let suite: UInt16
        let extendedMasterSecret: Bool?
        let signatureScheme: String?
        let violations: Set<String>
    }

    private static func row(
        _ label: String, xml: String = global("FCP_v2.1"), os: OSProfile = .ios26, tls version: TLSVersion = .tls12,
        suite: UInt16, ems: Bool? = true, scheme: String? = nil, expect violations: Set<String> = []
    ) -> Row {
        Row(
            label: "\(label) [\(os.rawValue)]", xml: xml, os: os, version: version, suite: suite,
            extendedMasterSecret: ems,
            signatureScheme: scheme, violations: violations)
    }

    static let rows: [Row] = [
        // 49: FCP_v2.1 on TLS 1.2.
        row("49: ECDHE-RSA-AES128-GCM-SHA256 with EMS", suite: 0xC02F),
        row("49: ECDHE-ECDSA-AES256-GCM-SHA384 with EMS", suite: 0xC02C),
        row("49: ECDHE-RSA-AES256-GCM-SHA384 with EMS", suite: 0xC030),
        row("49: TLS 1.2 without Extended Master Secret", suite: 0xC02F, ems: false, expect: ["niap_ems_missing"]),
        row("49: ECDHE-RSA-AES128-SHA (CBC)", suite: 0xC013, expect: ["niap_cipher"]),
        row("49: ECDHE-RSA-AES256-SHA (CBC)", suite: 0xC014, expect: ["niap_cipher"]),
        row("49: ECDHE-ECDSA-AES128-SHA (CBC)", suite: 0xC009, expect: ["niap_cipher"]),
        row("49: ECDHE-RSA-CHACHA20-POLY1305 (not AES-GCM)", suite: 0xCCA8, expect: ["niap_cipher"]),
        row("49: CBC and no EMS", suite: 0xC013, ems: false, expect: ["niap_cipher", "niap_ems_missing"]),
        row("49: rsa_pkcs1_sha1 handshake signature", suite: 0xC02F, scheme: "rsa_pkcs1_sha1", expect: ["niap_sigalg"]),
        row("49: rsa_pss_rsae_sha256 handshake signature", suite: 0xC02F, scheme: "rsa_pss_rsae_sha256"),
        row(
            "49: RSA key exchange allowed by FS=NO is still not ECDHE",
            xml: global("FCP_v2.1") + ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.forwardSecrecyNO)),
            suite: 0x009C, expect: ["niap_cipher"]),
        // 49: TLS 1.3 is fine with every suite; EMS is a TLS 1.2 notion.
        row("49: TLS 1.3 AES-128-GCM", tls: .tls13, suite: 0x1301, ems: nil),
        row("49: TLS 1.3 AES-256-GCM", tls: .tls13, suite: 0x1302, ems: nil),
        row("49: TLS 1.3 CHACHA20-POLY1305", tls: .tls13, suite: 0x1303, ems: false),
        // `recommended` currently means FCP_v2.1.
        row("recommended = FCP_v2.1: CBC", xml: global("recommended"), suite: 0xC013, expect: ["niap_cipher"]),
        row(
            "recommended = FCP_v2.1: no EMS", xml: global("recommended"), suite: 0xC02F, ems: false,
            expect: ["niap_ems_missing"]),
        // none, absent, and profiles without NIAP.
        row("none: CBC without EMS is plain ATS", xml: global("none"), suite: 0xC013, ems: false),
        row("absent: CBC without EMS is plain ATS", xml: "", suite: 0xC013, ems: false),
        row("FCP_v2.1 is not read before iOS 26", os: .ios17, suite: 0xC013, ems: false),
        row("FCP_v2.1 is not read before iOS 26", os: .ios10, suite: 0xC013, ems: false),
        // 50: per-domain override.
        row(
            "50: per-domain none under global FCP_v2.1",
            xml: global("FCP_v2.1") + ATSSpec.exceptionDomains(ATSSpec.domain("example.com", perDomain("none"))),
            suite: 0xC013, ems: false),
        row(
            "50: per-domain FCP_v2.1 under no global",
            xml: ATSSpec.exceptionDomains(ATSSpec.domain("example.com", perDomain("FCP_v2.1"))), suite: 0xC013,
            expect: ["niap_cipher"]),
        row(
            "50: per-domain FCP_v2.1 under global none",
            xml: global("none") + ATSSpec.exceptionDomains(ATSSpec.domain("example.com", perDomain("FCP_v2.1"))),
            suite: 0xC02F,
            ems: false, expect: ["niap_ems_missing"]),
        row(
            "50: per-domain recommended",
            xml: ATSSpec.exceptionDomains(ATSSpec.domain("example.com", perDomain("recommended"))), suite: 0xC013,
            expect: ["niap_cipher"]),
        row(
            "50: an entry without the key inherits the global FCP_v2.1",
            xml: global("FCP_v2.1") + ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.insecureYES)),
            suite: 0xC013,
            expect: ["niap_cipher"]),
        row(
            "50: the override is per domain: another host keeps the global",
            xml: global("FCP_v2.1") + ATSSpec.exceptionDomains(ATSSpec.domain("legacy.example.net", perDomain("none"))),
            suite: 0xC013, expect: ["niap_cipher"]),
    ]

    @Test("Items 49–50: NIAP FCP_v2.1 checks on example.com", arguments: rows)
    func niap(row: Row) throws {
        let policy = try policy(row.xml, settings: settings(row.os))
        let observed = connection(
            version: row.version, suite: row.suite, extendedMasterSecret: row.extendedMasterSecret,
            signatureScheme: row.signatureScheme)
        let result = try verdict(policy, observed: observed)
        #expect(Set(violationNames(result)) == row.violations)
        #expect(result.violations.count == row.violations.count)
        for violation in result.violations {
            #expect(violation.error.nsurl == -1200, "\(violation.kind.name)")
        }
    }

    @Test("Item 50: the requirements name the package in force per host")
    func packagePerHost() throws {
        let policy = try policy(
            Self.global("FCP_v2.1")
                + ATSSpec.exceptionDomains(ATSSpec.domain("legacy.example.com", Self.perDomain("none"))),
            settings: settings(.ios26))
        #expect(try policy.requirements(forHost: "example.com").niapPackage == .fcp21)
        #expect(try policy.requirements(forHost: "legacy.example.com").niapPackage != .fcp21)
        let ios17 = try self.policy(Self.global("FCP_v2.1"), settings: settings(.ios17))
        #expect(try ios17.requirements(forHost: "example.com").niapPackage != .fcp21)
    }
}
