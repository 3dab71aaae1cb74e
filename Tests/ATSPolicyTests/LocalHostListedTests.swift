import ATSPolicy
import Testing

/// `check` warns when an NSExceptionDomains key names a host ATS would exempt as local: listing it
/// takes it out of the exemption (an exception beats the local default; docs/ats-rules.md, "Local hosts").
@Suite("check: an exception for a host ATS exempts as local")
struct LocalHostListedTests: ATSSpecFixture {
    struct Row: ATSSpecRow {
        let label: String
        let key: String
        var entry = ""
        var os: OSProfile = .ios17
        var privateRanges = false
        let warns: Bool
    }

    static let rows: [Row] = [
        Row(label: "localhost", key: "localhost", warns: true),
        Row(label: "an unqualified name", key: "printer", warns: true),
        Row(label: "a .local name", key: "nas.local", warns: true),
        Row(label: "a loopback address", key: "127.0.0.1", warns: true),
        Row(label: "IPv6 loopback", key: "::1", warns: true),
        Row(label: "a link-local address", key: "169.254.10.1", warns: true),
        Row(label: "a private address, not local by default", key: "192.168.1.20", warns: false),
        Row(
            label: "a private address under local_networks private", key: "192.168.1.20", privateRanges: true,
            warns: true),
        Row(label: "a public name", key: "api.example.com", warns: false),
        Row(label: "a range", key: "127.0.0.0/8", warns: false),
        Row(
            label: "with insecure loads allowed, the entry keeps http working", key: "printer",
            entry: "<key>NSExceptionAllowsInsecureHTTPLoads</key><true/>", warns: false),
        Row(label: "ios9 had no local exemption", key: "nas.local", os: .ios9, warns: false),
        Row(
            label: "an unqualified name with subdomains is the whole-TLD finding instead", key: "dev",
            entry: "<key>NSIncludesSubdomains</key><true/>", warns: false),
    ]

    @Test("local_host_listed", arguments: rows)
    func localHostListed(row: Row) throws {
        var settings = settings(row.os)
        if row.privateRanges { settings.localNetworks += AddressRange.privateNetworks }
        let policy = try policy(
            "<key>NSExceptionDomains</key><dict><key>\(row.key)</key><dict>\(row.entry)</dict></dict>",
            settings: settings)
        let finding = policy.findings.first { $0.code == "local_host_listed" }
        #expect((finding != nil) == row.warns, "\(policy.findings.map(\.code))")
        if let finding {
            #expect(finding.severity == .warning)
            #expect(finding.message.contains("\"\(row.key)\" takes it out of the local-host exemption"))
        }
        // What the warning says is what the policy does: the listed host loses its exemption.
        if row.warns {
            let host = try HostIdentity(parsing: row.key)
            #expect(!policy.requirements(for: host, scheme: .http).cleartextAllowed)
            let unlisted = try self.policy("", settings: settings)
            #expect(unlisted.requirements(for: host, scheme: .http).cleartextAllowed)
        }
    }
}

/// `apple-system`: the OS's own services read no Info.plist (Apple support article 126655).
@Suite("the apple-system profile")
struct AppleSystemProfileTests: ATSSpecFixture {
    @Test("exceptions, arbitrary loads, local exemption and pins are not read: full ATS, TLS 1.2 floor")
    func noInfoPlist() throws {
        let permissive = """
            <key>NSAllowsArbitraryLoads</key><true/>
            <key>NSExceptionDomains</key><dict><key>mdm.example.com</key><dict>
            <key>NSExceptionAllowsInsecureHTTPLoads</key><true/>
            <key>NSExceptionMinimumTLSVersion</key><string>TLSv1.0</string></dict></dict>
            """
        let policy = try policy(permissive, settings: settings(.appleSystem))
        for host in ["mdm.example.com", "updates.example.net", "printer", "127.0.0.1"] {
            let requirements = try policy.requirements(forHost: host)
            #expect(requirements.atsMinimumsApply, "\(host)")
            #expect(requirements.minimumTLSVersion == .tls12, "\(host)")
            #expect(try !policy.requirements(forHost: host, scheme: .http).cleartextAllowed, "\(host)")
        }
        let legacy = connection(host: "mdm.example.com", version: .tls10, suite: 0xC013)
        #expect(violationNames(try verdict(policy, host: "mdm.example.com", observed: legacy)) == ["tls_version"])
        // The same policy on ios26 lets the app's entry through (and ios26 refuses TLS 1.0 anyway).
        let app = try self.policy(permissive, settings: settings(.ios26))
        #expect(try app.requirements(forHost: "mdm.example.com", scheme: .http).cleartextAllowed)
    }
}
