import ATSPolicy
import Testing

/// The `os_profile` row of docs/ats-rules.md, "The decisions": on `ios26` TLS 1.0 and 1.1 are
/// refused for every load, whatever the policy. Exceptions, `NSAllowsArbitraryLoads` (and its web and
/// media variants) and the local-host exemption bring them back on the earlier profiles only.
@Suite("iOS 26: TLS 1.0 and 1.1 refused for every load")
struct SpecIOS26TLSFloorTests: ATSSpecFixture {
    static let allProfiles: [OSProfile] = [.ios9, .ios10, .ios17, .ios26]
    static let clientClassProfiles: Set<OSProfile> = [.ios10, .ios17]

    /// One policy that lets a TLS 1.0/1.1 server through on some profiles.
    struct Row: ATSSpecRow {
        let label: String
        let xml: String
        let host: String
        let client: ClientClass
        let os: OSProfile
        let negotiated: TLSVersion
        /// Whether the load passes: the policy lets the version through on this profile.
        let allowed: Bool
    }

    /// Each policy, with the profiles on which it lets TLS 1.0 and 1.1 through. iOS 26 is in none.
    static let policies: [(label: String, xml: String, host: String, client: ClientClass, honouredOn: Set<OSProfile>)] =
        [
            ("no keys", "", "example.com", .urlsession, []),
            (
                "exception TLSv1.0",
                ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.minimumTLS("TLSv1.0"))),
                "example.com", .urlsession, [.ios9, .ios10, .ios17]
            ),
            (
                "exception TLSv1.0, insecure HTTP, no forward secrecy",
                ATSSpec.exceptionDomains(
                    ATSSpec.domain(
                        "example.com", ATSSpec.minimumTLS("TLSv1.0") + ATSSpec.insecureYES + ATSSpec.forwardSecrecyNO)),
                "example.com", .urlsession, [.ios9, .ios10, .ios17]
            ),
            ("NSAllowsArbitraryLoads", ATSSpec.arbitraryLoadsYES, "example.com", .urlsession, [.ios9, .ios10, .ios17]),
            (
                "NSAllowsArbitraryLoadsInWebContent, a web view",
                "<key>NSAllowsArbitraryLoadsInWebContent</key><true/>",
                "example.com", .webkit, clientClassProfiles
            ),
            (
                "NSAllowsArbitraryLoadsForMedia, a media load", "<key>NSAllowsArbitraryLoadsForMedia</key><true/>",
                "example.com", .media, clientClassProfiles
            ),
            ("a local name, no keys", "", "printer", .urlsession, clientClassProfiles),
            (
                "a .local name, NSAllowsLocalNetworking", "<key>NSAllowsLocalNetworking</key><true/>", "nas.local",
                .urlsession,
                clientClassProfiles
            ),
            ("loopback address, no keys", "", "127.0.0.1", .urlsession, clientClassProfiles),
        ]

    static let rows: [Row] = policies.flatMap { policy in
        allProfiles.flatMap { os in
            [TLSVersion.tls10, .tls11].map { version in
                Row(
                    label: "\(policy.label), \(os.rawValue), \(version.plistName)", xml: policy.xml, host: policy.host,
                    client: policy.client, os: os, negotiated: version, allowed: policy.honouredOn.contains(os))
            }
        }
    }

    @Test(
        "TLS 1.0/1.1 pass where the policy allows them, except on ios26; refused with -1200/-9836 and no key",
        arguments: rows)
    func legacyVersions(_ row: Row) throws {
        let policy = try policy(row.xml, settings: settings(row.os))
        let observed = tls12(0xC013, host: row.host, version: row.negotiated)
        let result = try verdict(policy, host: row.host, client: row.client, observed: observed)
        if row.allowed {
            #expect(result.isCompliant, "\(violationNames(result))")
            return
        }
        #expect(violationNames(result) == ["tls_version"])
        #expect(result.error == AppleError(nsurl: -1200, ssl: -9836))
        if row.os == .ios26 {
            // No Info.plist key helps on iOS 26: offering one would send the reader the wrong way.
            #expect(result.violations.first?.allowedBy == nil)
            #expect(result.violations.first?.explanation.contains("iOS 26") == true, "\(result.violations)")
        }
    }

    @Test("ios26 still passes TLS 1.2 under every one of those policies", arguments: policies.map(\.label))
    func tls12Passes(label: String) throws {
        let row = try #require(Self.policies.first { $0.label == label })
        let policy = try policy(row.xml, settings: settings(.ios26))
        let result = try verdict(
            policy, host: row.host, client: row.client, observed: tls12(0xC02F, host: row.host, version: .tls12))
        #expect(result.isCompliant, "\(violationNames(result))")
    }

    @Test("explain's why says so where ATS is off on ios26, and only there")
    func explanation() throws {
        let sentence = "iOS 26 refuses TLS 1.0 and 1.1 for every load: TLS 1.2 or later even with ATS off"
        let off26 = try policy(ATSSpec.arbitraryLoadsYES, settings: settings(.ios26)).requirements(
            forHost: "example.com")
        #expect(off26.explanation.contains(sentence), "\(off26.explanation)")
        let local26 = try policy("", settings: settings(.ios26)).requirements(forHost: "printer")
        #expect(local26.explanation.contains(sentence), "\(local26.explanation)")
        let off17 = try policy(ATSSpec.arbitraryLoadsYES, settings: settings(.ios17)).requirements(
            forHost: "example.com")
        #expect(!off17.explanation.contains { $0.contains("refuses TLS 1.0") })
        #expect(OSProfile.ios26.lowestTLSVersion == .tls12)
        // Apple's system services are iOS 26's (support article 126655): the same floor.
        #expect(OSProfile.appleSystem.lowestTLSVersion == .tls12)
        let earlier = OSProfile.allCases.filter { $0 != .ios26 && $0 != .appleSystem }
        #expect(earlier.allSatisfy { $0.lowestTLSVersion == .tls10 })
    }
}
