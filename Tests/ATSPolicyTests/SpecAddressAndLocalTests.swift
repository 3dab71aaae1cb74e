import ATSPolicy
import Testing

/// IP literals, CIDR keys and local hosts per OS profile, cases Item 19–27 (Apple: NSExceptionDomains,
/// NSAllowsLocalNetworking; Apple open source: SecProtocolConfiguration.m; docs/ats-rules.md, "The decisions":
/// local = names without a dot, `.local` names, loopback and link-local addresses, plus `local_networks`).
@Suite("Spec §7.19–27: IP addresses, CIDR keys and local hosts")
struct SpecAddressAndLocalTests: ATSSpecFixture {
    static let allProfiles: [OSProfile] = [.ios9, .ios10, .ios17, .ios26]
    static let ipKeyProfiles: [OSProfile] = [.ios17, .ios26]
    static let rfc1918 = AddressRange.defaultLocalNetworks + AddressRange.privateNetworks

    struct Row: ATSSpecRow {
        let label: String
        let xml: String
        let host: String
        let os: OSProfile
        let localNetworks: [AddressRange]
        /// Whether `http://host` loads.
        let cleartextAllowed: Bool
    }

    private static func rows(
        _ label: String, _ xml: String = "", hosts: [String], profiles: [OSProfile] = allProfiles,
        localNetworks: [AddressRange] = AddressRange.defaultLocalNetworks, allowedOn: [OSProfile]
    ) -> [Row] {
        hosts.flatMap { host in
            profiles.map { os in
                Row(
                    label: "\(label): \(host) [\(os.rawValue)]", xml: xml, host: host, os: os,
                    localNetworks: localNetworks, cleartextAllowed: allowedOn.contains(os))
            }
        }
    }

    private static func exceptions(_ entries: String...) -> String {
        "<key>NSExceptionDomains</key><dict>\(entries.joined())</dict>"
    }
    private static func d(_ key: String, _ body: String = "") -> String { ATSSpec.domain(key, body) }
    private static let yes = ATSSpec.insecureYES
    private static let no = ATSSpec.insecureNO

    /// ⚠️ Before iOS 17 Apple's NSAllowsLocalNetworking and NSExceptionDomains pages say IP keys cannot be used
    /// (DTS saw one "apparently" work on an iOS 9 beta). These rows assert the documented reading: on ios9 an IP
    /// key does not open http://; on ios10 every IP literal is exempt from ATS anyway (Apple:
    /// NSAllowsLocalNetworking).
    static let ipKeyPreIOS17: [Row] =
        rows(
            "⚠️ IP key insecure=YES before iOS 17", exceptions(d("203.0.113.5", yes)), hosts: ["203.0.113.5"],
            profiles: [.ios9, .ios10], allowedOn: [.ios10])

    static let table: [Row] =
        // Item 19: a public IP literal.
        rows("19: public IPv4, no keys", hosts: ["203.0.113.5"], allowedOn: [.ios10])
        + rows("19: public IPv6, no keys", hosts: ["2001:db8::5", "[2001:db8::5]"], allowedOn: [.ios10])
        + rows(
            "19: NSAllowsArbitraryLoads opens a public IP", ATSSpec.arbitraryLoadsYES, hosts: ["203.0.113.5"],
            allowedOn: allProfiles)
        // LocalNetworking applies only to direct hosts, and cancels AAL for the rest (Apple open source:
        // SecProtocolConfiguration.m, `testLocalNetworkingKeyOverridesAllowsArbitraryLoads`).
        + rows(
            "§2.5: LocalNetworking=YES + AAL=YES leaves a public IP blocked",
            ATSSpec.arbitraryLoadsYES + "<key>NSAllowsLocalNetworking</key><true/>", hosts: ["203.0.113.1"],
            allowedOn: [.ios9, .ios10])
        + rows(
            "§2.5: LocalNetworking=YES alone does not open a public IP", "<key>NSAllowsLocalNetworking</key><true/>",
            hosts: ["203.0.113.1"], allowedOn: [.ios10])
        // Item 20: address and CIDR keys.
        + rows(
            "20: exact key insecure=YES", exceptions(d("203.0.113.5", yes)), hosts: ["203.0.113.5"],
            profiles: ipKeyProfiles, allowedOn: ipKeyProfiles)
        + rows(
            "20: exact key does not cover a neighbour", exceptions(d("203.0.113.5", yes)), hosts: ["203.0.113.6"],
            profiles: ipKeyProfiles, allowedOn: [])
        + rows(
            "20: /24 insecure=YES", exceptions(d("203.0.113.0/24", yes)), hosts: ["203.0.113.5", "203.0.113.255"],
            profiles: ipKeyProfiles, allowedOn: ipKeyProfiles)
        + rows(
            "20: /24 does not cover the next /24", exceptions(d("203.0.113.0/24", yes)), hosts: ["203.0.114.1"],
            profiles: ipKeyProfiles, allowedOn: [])
        + rows(
            "20: /24=YES + /27=NO: the /27 wins", exceptions(d("198.51.100.0/24", yes), d("198.51.100.0/27", no)),
            hosts: ["198.51.100.1", "198.51.100.31"], profiles: ipKeyProfiles, allowedOn: [])
        + rows(
            "20: /27=NO + /24=YES (file order reversed): the /27 wins",
            exceptions(d("198.51.100.0/27", no), d("198.51.100.0/24", yes)),
            hosts: ["198.51.100.1", "198.51.100.31"], profiles: ipKeyProfiles, allowedOn: [])
        + rows(
            "20: /24=YES + /27=NO: outside the /27 the /24 applies",
            exceptions(d("198.51.100.0/24", yes), d("198.51.100.0/27", no)),
            hosts: ["198.51.100.32", "198.51.100.200"], profiles: ipKeyProfiles, allowedOn: ipKeyProfiles)
        + rows(
            "20: a /32 beats the /27",
            exceptions(d("198.51.100.0/24", yes), d("198.51.100.0/27", no), d("198.51.100.1/32", yes)),
            hosts: ["198.51.100.1"], profiles: ipKeyProfiles, allowedOn: ipKeyProfiles)
        + rows(
            "20: an exact key beats the /27", exceptions(d("198.51.100.0/27", no), d("198.51.100.1", yes)),
            hosts: ["198.51.100.1"], profiles: ipKeyProfiles, allowedOn: ipKeyProfiles)
        + rows(
            "20: an exact insecure=NO key beats a /24=YES",
            exceptions(d("198.51.100.0/24", yes), d("198.51.100.7", no)),
            hosts: ["198.51.100.7"], profiles: ipKeyProfiles, allowedOn: [])
        + ipKeyPreIOS17
        // Item 21: IPv6.
        + rows(
            "21: 2001:db8::/32 covers 2001:db8:85a3::1", exceptions(d("2001:db8::/32", yes)),
            hosts: ["2001:db8:85a3::1", "[2001:db8:85a3::1]"], profiles: ipKeyProfiles, allowedOn: ipKeyProfiles)
        + rows(
            "21: 2001:db8::/32 does not cover 2001:db9::1", exceptions(d("2001:db8::/32", yes)), hosts: ["2001:db9::1"],
            profiles: ipKeyProfiles, allowedOn: [])
        // ⚠️ Apple compares the text (SecProtocolConfiguration.m); atsproxy normalises both sides instead
        // (docs/ats-rules.md, "Settings"), so these match.
        + rows(
            "⚠️ 21: non-canonical key 2001:0db8::1 vs canonical host", exceptions(d("2001:0db8::1", yes)),
            hosts: ["2001:db8::1"], profiles: ipKeyProfiles, allowedOn: ipKeyProfiles)
        + rows(
            "⚠️ 21: key 2001:0db8:0000:0000:0000:0000:0000:0001 vs canonical host",
            exceptions(d("2001:0db8:0000:0000:0000:0000:0000:0001", yes)), hosts: ["[2001:db8::1]"],
            profiles: ipKeyProfiles, allowedOn: ipKeyProfiles)
        // IPv4-mapped IPv6 gets no special handling; families never mix.
        + rows(
            "21: IPv4-mapped host vs an IPv4 /24", exceptions(d("203.0.113.0/24", yes)),
            hosts: ["::ffff:203.0.113.5", "[::ffff:203.0.113.5]"], profiles: ipKeyProfiles, allowedOn: [])
        + rows(
            "21: IPv4-mapped host vs the exact IPv4 key", exceptions(d("203.0.113.5", yes)),
            hosts: ["::ffff:203.0.113.5"], profiles: ipKeyProfiles, allowedOn: [])
        + rows(
            "21: IPv4 host vs ::/0", exceptions(d("::/0", yes)), hosts: ["203.0.113.5"], profiles: ipKeyProfiles,
            allowedOn: [])
        + rows(
            "21: IPv6 host vs 0.0.0.0/0", exceptions(d("0.0.0.0/0", yes)), hosts: ["2001:db8::1"],
            profiles: ipKeyProfiles, allowedOn: [])
        + rows(
            "21: 0.0.0.0/0 covers every IPv4 host", exceptions(d("0.0.0.0/0", yes)), hosts: ["203.0.113.5", "8.8.8.8"],
            profiles: ipKeyProfiles, allowedOn: ipKeyProfiles)
        // CIDR short forms (Apple open source: SecProtocolConfiguration.m).
        + rows(
            "§1.5: IPv4 short form 10/8", exceptions(d("10/8", yes)), hosts: ["10.1.2.3"], profiles: ipKeyProfiles,
            allowedOn: ipKeyProfiles)
        + rows(
            "§1.5: IPv4 short form 192.168/16", exceptions(d("192.168/16", yes)), hosts: ["192.168.7.7"],
            profiles: ipKeyProfiles, allowedOn: ipKeyProfiles)
        + rows(
            "§1.5: IPv4 short form 10/8 does not cover 11.0.0.1", exceptions(d("10/8", yes)), hosts: ["11.0.0.1"],
            profiles: ipKeyProfiles, allowedOn: [])
        + rows(
            "§1.5: IPv6 prefix without :: (2001:db8/32)", exceptions(d("2001:db8/32", yes)), hosts: ["2001:db8::5"],
            profiles: ipKeyProfiles, allowedOn: ipKeyProfiles)
        // Item 22: NSIncludesSubdomains on an IP entry has no effect.
        + rows(
            "22: IP key with subdomains still covers the address",
            exceptions(d("203.0.113.5", ATSSpec.subdomainsYES + yes)), hosts: ["203.0.113.5"], profiles: ipKeyProfiles,
            allowedOn: ipKeyProfiles)
        + rows(
            "22: IP key with subdomains does not cover the name a.203.0.113.5",
            exceptions(d("203.0.113.5", ATSSpec.subdomainsYES + yes)), hosts: ["a.203.0.113.5"],
            profiles: ipKeyProfiles, allowedOn: [])
        + rows(
            "22: CIDR key with subdomains covers its range",
            exceptions(d("203.0.113.0/24", ATSSpec.subdomainsYES + yes)), hosts: ["203.0.113.9"],
            profiles: ipKeyProfiles, allowedOn: ipKeyProfiles)
        // Item 23: names and addresses are kept apart.
        + rows(
            "23: a name key does not cover an IP", exceptions(d("example.com", ATSSpec.subdomainsYES + yes)),
            hosts: ["93.184.215.14"], profiles: ipKeyProfiles, allowedOn: [])
        + rows(
            "23: an IP key does not cover a name", exceptions(d("93.184.215.14", yes)), hosts: ["example.com"],
            profiles: allProfiles, allowedOn: [])
        // Item 24: local names.
        + rows(
            "24: local names, no keys",
            hosts: ["localhost", "printer", "nas.local", "NAS.Local", "nas.local.", "printer."],
            allowedOn: [.ios10, .ios17, .ios26])
        + rows(
            "24: not local names", hosts: ["printer.lan", "nas.local.example.com", "example.localhost"], allowedOn: [])
        + rows(
            "24: NSAllowsLocalNetworking=NO", "<key>NSAllowsLocalNetworking</key><false/>",
            hosts: ["localhost", "printer", "nas.local"], allowedOn: [])
        + rows(
            "24: NSAllowsLocalNetworking=YES (ignored on iOS 9)", "<key>NSAllowsLocalNetworking</key><true/>",
            hosts: ["localhost", "nas.local"], allowedOn: [.ios10, .ios17, .ios26])
        + rows(
            "24: NSAllowsLocalNetworking=\"NO\" (string: absent)",
            "<key>NSAllowsLocalNetworking</key><string>NO</string>", hosts: ["localhost"],
            allowedOn: [.ios10, .ios17, .ios26])
        + rows("24: explicit entry insecure=NO", exceptions(d("nas.local", no)), hosts: ["nas.local"], allowedOn: [])
        + rows("24: explicit empty entry", exceptions(d("localhost")), hosts: ["localhost"], allowedOn: [])
        + rows(
            "24: explicit entry insecure=YES (the iOS 9 way)", exceptions(d("localhost", yes)), hosts: ["localhost"],
            allowedOn: allProfiles)
        + rows("24: AAL=YES (the iOS 9 way)", ATSSpec.arbitraryLoadsYES, hosts: ["localhost"], allowedOn: allProfiles)
        + rows(
            "24: AAL=YES + NSAllowsLocalNetworking=NO",
            ATSSpec.arbitraryLoadsYES + "<key>NSAllowsLocalNetworking</key><false/>",
            hosts: ["localhost"], allowedOn: [.ios9])
        // Item 25: loopback and link-local addresses are local (⚠️ Apple's SecProtocolConfigurationTest.m
        // treats them as direct; a reported DTS observation says 127.0.0.1 was blocked on macOS 14.
        // atsproxy counts loopback and link-local addresses as local (docs/ats-rules.md, "The decisions"), so
        // they are asserted allowed).
        + rows(
            "⚠️ 25: loopback and link-local, no keys",
            hosts: ["127.0.0.1", "127.1.2.3", "[::1]", "::1", "[fe80::1%en0]", "fe80::1", "169.254.10.20"],
            allowedOn: [.ios10, .ios17, .ios26])
        + rows("25: not direct: fe00::1 and public addresses", hosts: ["fe00::1", "203.0.113.1"], allowedOn: [.ios10])
        + rows(
            "25: 0.0.0.0/1 → NO makes 127.0.0.1 require ATS", exceptions(d("0.0.0.0/1", no)), hosts: ["127.0.0.1"],
            profiles: ipKeyProfiles, allowedOn: [])
        + rows(
            "25: NSAllowsLocalNetworking=NO blocks loopback", "<key>NSAllowsLocalNetworking</key><false/>",
            hosts: ["127.0.0.1", "[::1]"], allowedOn: [])
        // Item 26: private LAN addresses and the rfc1918 preset.
        + rows(
            "26: private LAN address, default local_networks",
            hosts: ["192.168.1.10", "10.20.30.40", "172.16.5.4", "fd12::1"], allowedOn: [.ios10])
        + rows(
            "26: private LAN address, rfc1918 preset",
            hosts: ["192.168.1.10", "10.20.30.40", "172.16.5.4", "172.31.255.255", "fc00::1", "fd12::1"],
            localNetworks: rfc1918, allowedOn: [.ios10, .ios17, .ios26])
        + rows(
            "26: 172.32.0.1 is outside 172.16/12", hosts: ["172.32.0.1"], localNetworks: rfc1918, allowedOn: [.ios10])
        // Item 27: invalid CIDR keys are ignored.
        + rows(
            "27: 10.0.0.0/33 is invalid and ignored", exceptions(d("10.0.0.0/33", yes)), hosts: ["10.0.0.1"],
            profiles: ipKeyProfiles, allowedOn: [])
        + rows(
            "27: 2001:db8::/129 is invalid and ignored", exceptions(d("2001:db8::/129", yes)), hosts: ["2001:db8::1"],
            profiles: ipKeyProfiles, allowedOn: [])
        + rows(
            "27: fe80::%lo0/10 (zone) is unsupported: fe80::1 stays local", exceptions(d("fe80::%lo0/10", no)),
            hosts: ["fe80::1"], profiles: ipKeyProfiles, allowedOn: ipKeyProfiles)
        + rows(
            "27: 300.0.0.0/8 is invalid and ignored", exceptions(d("300.0.0.0/8", yes)), hosts: ["44.0.0.1"],
            profiles: ipKeyProfiles, allowedOn: [])

    @Test("http:// to addresses and local hosts, per OS profile", arguments: table)
    func cleartext(row: Row) throws {
        let policy = try policy(row.xml, settings: settings(row.os, localNetworks: row.localNetworks))
        #expect(try cleartextAllowed(policy, host: row.host) == row.cleartextAllowed)
    }

    // MARK: - Which rule decided

    struct RuleRow: ATSSpecRow {
        let label: String
        let xml: String
        let host: String
        let os: OSProfile
        let kind: RuleSource.Kind
    }

    static let ruleRows: [RuleRow] = [
        RuleRow(label: "localhost on ios17: local", xml: "", host: "localhost", os: .ios17, kind: .local),
        RuleRow(label: "nas.local on ios26: local", xml: "", host: "nas.local", os: .ios26, kind: .local),
        RuleRow(label: "127.0.0.1 on ios17: local", xml: "", host: "127.0.0.1", os: .ios17, kind: .local),
        RuleRow(
            label: "203.0.113.5 on ios10: local (every IP)", xml: "", host: "203.0.113.5", os: .ios10, kind: .local),
        RuleRow(label: "localhost on ios9: full ATS", xml: "", host: "localhost", os: .ios9, kind: .default),
        RuleRow(label: "203.0.113.5 on ios17: full ATS", xml: "", host: "203.0.113.5", os: .ios17, kind: .default),
        RuleRow(
            label: "localhost with LocalNetworking=NO: full ATS", xml: "<key>NSAllowsLocalNetworking</key><false/>",
            host: "localhost", os: .ios17, kind: .default),
        RuleRow(
            label: "nas.local with an entry: exception", xml: exceptions(d("nas.local")), host: "nas.local", os: .ios17,
            kind: .exception),
        RuleRow(
            label: "127.0.0.1 under 0.0.0.0/1: exception", xml: exceptions(d("0.0.0.0/1", no)), host: "127.0.0.1",
            os: .ios17, kind: .exception),
    ]

    @Test("§2.2: the rule that decides a local or address host", arguments: ruleRows)
    func rule(row: RuleRow) throws {
        let requirements = try policy(row.xml, settings: settings(row.os)).requirements(forHost: row.host)
        #expect(requirements.rule.kind == row.kind)
        #expect(requirements.atsMinimumsApply == (row.kind != .local))
    }

    @Test("Item 20: the /27 rule's key is reported for .1–.31", arguments: [1, 15, 31])
    func longestPrefixKey(lastOctet: Int) throws {
        let policy = try policy(
            Self.exceptions(Self.d("198.51.100.0/24", Self.yes), Self.d("198.51.100.0/27", Self.no)))
        let requirements = try policy.requirements(forHost: "198.51.100.\(lastOctet)")
        #expect(requirements.rule.kind == .exception)
        #expect(requirements.rule.key == "198.51.100.0/27")
    }

    // MARK: - HTTPS to a local host: no ATS minimums, default trust still applies (docs/ats-rules.md, rule 2)

    @Test(
        "Item 24: HTTPS to a local host skips the ATS minimums but not default trust",
        arguments: ["localhost", "nas.local", "127.0.0.1"])
    func localHTTPS(host: String) throws {
        let policy = try policy("")
        let oldTLS = connection(host: host, version: .tls10, suite: 0xC013)
        #expect(try verdict(policy, host: host, observed: oldTLS).isCompliant)
        let selfSigned = connection(
            host: host, chain: [leaf(for: host, selfSigned: true)], trust: .untrusted(reason: "self-signed"))
        #expect(violationNames(try verdict(policy, host: host, observed: selfSigned)) == ["untrusted_chain"])
        // With assume_app_overrides_trust the app may accept it (ATS is off for the host).
        let trusting = try self.policy("", settings: settings(assumeAppOverridesTrust: true))
        #expect(try verdict(trusting, host: host, observed: selfSigned).isCompliant)
    }

    // MARK: - Item 27: invalid CIDR keys are reported

    @Test(
        "Item 27: an invalid CIDR key is reported",
        arguments: ["10.0.0.0/33", "2001:db8::/129", "fe80::%lo0/10", "300.0.0.0/8"])
    func invalidCIDRReported(key: String) throws {
        let policy = try policy(Self.exceptions(Self.d(key, Self.yes)))
        #expect(policy.findings.contains { $0.path.description.contains(key) && $0.severity == .error })
    }
}
