import ATSPolicy
import Testing

/// Cases Item 1–10: global keys and their precedence per OS profile (Apple: NSAppTransportSecurity,
/// NSAllowsArbitraryLoads), wrong types (Apple open source: SecProtocolConfiguration.m), listed domains
/// cancelling the globals and per-domain keys (Apple: NSExceptionDomains), legacy keys and built-in
/// exceptions (docs/ats-rules.md, "The decisions"; SecProtocolConfiguration.m).
@Suite("Spec §7.1–10: global keys, precedence, wrong types, per-domain keys")
struct SpecPrecedenceTests: ATSSpecFixture {
    static let allProfiles: [OSProfile] = [.ios9, .ios10, .ios17, .ios26]
    static let ios10Plus: [OSProfile] = [.ios10, .ios17, .ios26]

    // MARK: - The global decision for a public host (Apple: NSAllowsArbitraryLoads; SecProtocolConfiguration.m)

    struct GlobalRow: ATSSpecRow {
        let label: String
        let xml: String
        let client: ClientClass
        let os: OSProfile
        /// Whether `http://public.example.com` loads.
        let cleartextAllowed: Bool
    }

    /// One policy, one client class, the expected answer on each profile.
    private static func rows(
        _ label: String, _ xml: String, client: ClientClass = .urlsession, allowedOn: [OSProfile]
    ) -> [GlobalRow] {
        allProfiles.map { os in
            GlobalRow(
                label: "\(label) [\(client.rawValue), \(os.rawValue)]", xml: xml, client: client, os: os,
                cleartextAllowed: allowedOn.contains(os))
        }
    }

    static let aal = "<key>NSAllowsArbitraryLoads</key><true/>"
    static let localYES = "<key>NSAllowsLocalNetworking</key><true/>"
    static let localNO = "<key>NSAllowsLocalNetworking</key><false/>"
    static let webYES = "<key>NSAllowsArbitraryLoadsInWebContent</key><true/>"
    static let webNO = "<key>NSAllowsArbitraryLoadsInWebContent</key><false/>"
    static let mediaYES = "<key>NSAllowsArbitraryLoadsForMedia</key><true/>"
    static let mediaNO = "<key>NSAllowsArbitraryLoadsForMedia</key><false/>"

    static let globalRows: [GlobalRow] =
        rows("no keys: full ATS", "", allowedOn: [])
        // Item 1.
        + rows("NSAllowsArbitraryLoads=YES alone", aal, allowedOn: allProfiles)
        // Item 2: iOS 10+ ignores AAL when LocalNetworking is present; iOS 9 knows only AAL.
        + rows("AAL=YES + NSAllowsLocalNetworking=YES", aal + localYES, allowedOn: [.ios9])
        + rows("AAL=YES + NSAllowsLocalNetworking=NO", aal + localNO, allowedOn: [.ios9])
        // Item 3: presence, whatever the value, cancels AAL; the client-class keys do not help URLSession.
        + rows("AAL=YES + InWebContent=NO", aal + webNO, allowedOn: [.ios9])
        + rows("AAL=YES + ForMedia=NO", aal + mediaNO, allowedOn: [.ios9])
        + rows("AAL=YES + ForMedia=YES", aal + mediaYES, allowedOn: [.ios9])
        + rows("AAL=YES + InWebContent=YES", aal + webYES, allowedOn: [.ios9])
        // Item 4: InWebContent relaxes web views only, from iOS 10.
        + rows("InWebContent=YES", webYES, client: .webkit, allowedOn: ios10Plus)
        + rows("InWebContent=YES", webYES, client: .urlsession, allowedOn: [])
        + rows("InWebContent=YES", webYES, client: .media, allowedOn: [])
        + rows("AAL=YES + InWebContent=YES", aal + webYES, client: .webkit, allowedOn: allProfiles)
        + rows("InWebContent=NO", webNO, client: .webkit, allowedOn: [])
        // ForMedia relaxes AVFoundation media loads only, from iOS 10.
        + rows("ForMedia=YES", mediaYES, client: .media, allowedOn: ios10Plus)
        + rows("ForMedia=YES", mediaYES, client: .urlsession, allowedOn: [])
        + rows("ForMedia=YES", mediaYES, client: .webkit, allowedOn: [])
        // Apple's code order (SecProtocolConfiguration.m): the client-class key relaxes its own client before
        // LocalNetworking cancels anything.
        + rows("ForMedia=YES + NSAllowsLocalNetworking=YES", mediaYES + localYES, client: .media, allowedOn: ios10Plus)
        + rows(
            "InWebContent=YES + NSAllowsLocalNetworking=YES", webYES + localYES, client: .webkit, allowedOn: ios10Plus)
        + rows("AAL=YES + ForMedia=YES", aal + mediaYES, client: .media, allowedOn: allProfiles)
        + rows("AAL=YES + ForMedia=YES", aal + mediaYES, client: .webkit, allowedOn: [.ios9])
        // Item 5: the misspelling is no key at all: it neither relaxes nor cancels.
        + rows(
            "NSAllowsArbitraryLoadsInMedia=YES", "<key>NSAllowsArbitraryLoadsInMedia</key><true/>", client: .media,
            allowedOn: [])
        + rows("NSAllowsArbitraryLoadsInMedia=YES", "<key>NSAllowsArbitraryLoadsInMedia</key><true/>", allowedOn: [])
        + rows(
            "AAL=YES + NSAllowsArbitraryLoadsInMedia=YES", aal + "<key>NSAllowsArbitraryLoadsInMedia</key><true/>",
            allowedOn: allProfiles)
        + rows(
            "AAL=YES + NSAllowsArbitraryLoadsInMedia=YES", aal + "<key>NSAllowsArbitraryLoadsInMedia</key><true/>",
            client: .media, allowedOn: allProfiles)
        // Misspelt keys are exact, case-sensitive lookups: ignored (SecProtocolConfiguration.m).
        + rows("NSAllowArbitraryLoads=YES (misspelt)", "<key>NSAllowArbitraryLoads</key><true/>", allowedOn: [])
        + rows("nsallowsarbitraryloads=YES (wrong case)", "<key>nsallowsarbitraryloads</key><true/>", allowedOn: [])
        // Item 6: wrong types (SecProtocolConfiguration.m).
        + rows(
            "AAL=\"YES\" (string): absent, ATS on", "<key>NSAllowsArbitraryLoads</key><string>YES</string>",
            allowedOn: [])
        + rows(
            "AAL=2 (integer): present-false, ATS on", "<key>NSAllowsArbitraryLoads</key><integer>2</integer>",
            allowedOn: [])
        + rows("AAL=0 (integer): present-false", "<key>NSAllowsArbitraryLoads</key><integer>0</integer>", allowedOn: [])
        // ⚠️ An integer 1 is probably true in Apple's parser ([@1 isEqual:@YES], SecProtocolConfiguration.m),
        // though no Apple test shows it. Asserting that "probably true" reading.
        + rows(
            "AAL=1 (integer): probably true (⚠️ §1.5)", "<key>NSAllowsArbitraryLoads</key><integer>1</integer>",
            allowedOn: allProfiles)
        + rows(
            "AAL=YES + LocalNetworking=\"YES\" (string): absent, does not cancel",
            aal
                + "<key>NSAllowsLocalNetworking</key><string>YES</string>", allowedOn: allProfiles)
        + rows(
            "AAL=YES + InWebContent=\"NO\" (string): absent, does not cancel",
            aal
                + "<key>NSAllowsArbitraryLoadsInWebContent</key><string>NO</string>", allowedOn: allProfiles)
        + rows(
            "AAL=YES + LocalNetworking=0 (integer): present, cancels",
            aal
                + "<key>NSAllowsLocalNetworking</key><integer>0</integer>", allowedOn: [.ios9])
        + rows(
            "AAL=YES + NSExceptionDomains as an array: exceptions ignored, globals kept",
            aal + "<key>NSExceptionDomains</key><array><string>public.example.com</string></array>",
            allowedOn: allProfiles)
        + rows(
            "NSExceptionDomains as an array naming the host with insecure HTTP: ignored",
            "<key>NSExceptionDomains</key><array><dict><key>public.example.com</key><dict>"
                + ATSSpec.insecureYES + "</dict></dict></array>", allowedOn: [])

    @Test("http:// to a public host, by global keys, client class and OS profile", arguments: globalRows)
    func globalDecision(row: GlobalRow) throws {
        let policy = try policy(row.xml, settings: settings(row.os))
        let allowed = try cleartextAllowed(policy, host: "public.example.com", client: row.client)
        #expect(allowed == row.cleartextAllowed)
        let requirements = try policy.requirements(
            forHost: "public.example.com", scheme: .http, clientClass: row.client)
        // A public host with no exception is decided by the globals: arbitrary loads or full ATS.
        #expect(requirements.rule.kind == (row.cleartextAllowed ? .arbitraryLoads : .default))
        #expect(requirements.atsMinimumsApply == !row.cleartextAllowed)
    }

    @Test("Item 4: the key that relaxed a web view or media load is named as the rule")
    func clientClassRuleKey() throws {
        let web = try policy(Self.webYES).requirements(forHost: "a.example.net", scheme: .http, clientClass: .webkit)
        #expect(web.rule.kind == .arbitraryLoads)
        #expect(web.rule.key == "NSAllowsArbitraryLoadsInWebContent")
        let media = try policy(Self.mediaYES).requirements(forHost: "a.example.net", scheme: .http, clientClass: .media)
        #expect(media.rule.kind == .arbitraryLoads)
        #expect(media.rule.key == "NSAllowsArbitraryLoadsForMedia")
    }

    @Test("Item 5: NSAllowsArbitraryLoadsInMedia draws a warning suggesting NSAllowsArbitraryLoadsForMedia")
    func inMediaWarning() throws {
        let policy = try policy(Self.aal + "<key>NSAllowsArbitraryLoadsInMedia</key><true/>")
        let finding = try #require(
            policy.findings.first { $0.path.description.contains("NSAllowsArbitraryLoadsInMedia") })
        #expect(finding.severity == .warning)
        #expect((finding.message + (finding.fix ?? "")).contains("NSAllowsArbitraryLoadsForMedia"))
        // And it cancels nothing: NSAllowsArbitraryLoads still turns ATS off.
        #expect(policy.allowsArbitraryLoadsForMedia == .absent)
    }

    @Test("Item 6: AAL=\"YES\" (string) is reported and treated as absent")
    func stringBooleanIsAbsent() throws {
        let policy = try policy("<key>NSAllowsArbitraryLoads</key><string>YES</string>")
        #expect(policy.allowsArbitraryLoads == .absent)
        #expect(policy.findings.contains { $0.path.description.contains("NSAllowsArbitraryLoads") })
    }

    // MARK: - Item 1: NSAllowsArbitraryLoads=YES and HTTPS

    /// ios26 is left out: there TLS 1.0/1.1 are refused for every load, NSAllowsArbitraryLoads or not
    /// (docs/ats-rules.md, "The decisions", `os_profile`), which SpecIOS26TLSFloorTests holds.
    @Test(
        "Item 1: AAL=YES drops the ATS minimums: TLS 1.0 with a CBC suite passes",
        arguments: [OSProfile.ios9, .ios10, .ios17])
    func arbitraryLoadsAllowsOldTLS(os: OSProfile) throws {
        let policy = try policy(Self.aal, settings: settings(os))
        let requirements = try policy.requirements(forHost: "example.com")
        #expect(requirements.atsMinimumsApply == false)
        #expect(requirements.minimumTLSVersion == nil)
        #expect(requirements.requiresForwardSecrecy == false)
        for version in [TLSVersion.tls10, .tls11] {
            let result = try verdict(policy, observed: tls12(0xC013, version: version))
            #expect(result.isCompliant, "TLS \(version) under NSAllowsArbitraryLoads: \(violationNames(result))")
        }
    }

    @Test("Item 1: AAL=YES still applies default trust: an expired certificate is rejected", arguments: allProfiles)
    func arbitraryLoadsStillChecksTrust(os: OSProfile) throws {
        let policy = try policy(Self.aal, settings: settings(os))
        let expired = connection(leaf: leaf(notBefore: ATSSpec.now - 100 * ATSSpec.day, lifetimeDays: 90))
        let result = try verdict(policy, observed: expired)
        #expect(violationNames(result) == ["expired"])
        let selfSigned = connection(
            chain: [leaf(selfSigned: true)], trust: .untrusted(reason: "self-signed certificate"))
        #expect(violationNames(try verdict(policy, observed: selfSigned)) == ["untrusted_chain"])
    }

    @Test("Item 1: with assume_app_overrides_trust the app may accept the expired certificate under AAL")
    func arbitraryLoadsWithTrustOverride() throws {
        let policy = try policy(Self.aal, settings: settings(assumeAppOverridesTrust: true))
        let requirements = try policy.requirements(forHost: "example.com")
        #expect(requirements.appMayOverrideTrust)
        let expired = connection(leaf: leaf(notBefore: ATSSpec.now - 100 * ATSSpec.day, lifetimeDays: 90))
        #expect(try verdict(policy, observed: expired).isCompliant)
    }

    @Test("Item 1: without AAL the app may not override trust, even with assume_app_overrides_trust")
    func noOverrideUnderFullATS() throws {
        let policy = try policy("", settings: settings(assumeAppOverridesTrust: true))
        let requirements = try policy.requirements(forHost: "example.com")
        #expect(requirements.appMayOverrideTrust == false)
        let expired = connection(leaf: leaf(notBefore: ATSSpec.now - 100 * ATSSpec.day, lifetimeDays: 90))
        #expect(violationNames(try verdict(policy, observed: expired)) == ["expired"])
    }

    // MARK: - Item 7: a listed domain cancels every global key (Apple: NSExceptionDomains)

    @Test("Item 7: AAL=YES + empty dict for example.com: example.com gets full ATS, other.com does not")
    func emptyEntryGetsFullATS() throws {
        let policy = try policy(Self.aal + ATSSpec.exceptionDomains(ATSSpec.domain("example.com")))
        let listed = try policy.requirements(forHost: "example.com")
        #expect(listed.rule.kind == .exception)
        #expect(listed.rule.key == "example.com")
        #expect(listed.cleartextAllowed == false)
        #expect(listed.atsMinimumsApply)
        #expect(listed.minimumTLSVersion == .tls12)
        #expect(listed.requiresForwardSecrecy)
        #expect(listed.appMayOverrideTrust == false)
        #expect(try cleartextAllowed(policy, host: "example.com") == false)
        #expect(violationNames(try verdict(policy, observed: tls12(0xC013, version: .tls10))) == ["tls_version"])

        let other = try policy.requirements(forHost: "other.com")
        #expect(other.rule.kind == .arbitraryLoads)
        #expect(try cleartextAllowed(policy, host: "other.com"))
        #expect(
            try verdict(policy, host: "other.com", observed: tls12(0xC013, host: "other.com", version: .tls10))
                .isCompliant)
        // The entry has no NSIncludesSubdomains: a subdomain is not listed, so the global applies.
        #expect(try cleartextAllowed(policy, host: "www.example.com"))
    }

    struct ListedRow: ATSSpecRow {
        let label: String
        let globals: String
        let client: ClientClass
    }

    static let listedRows: [ListedRow] = [
        ListedRow(label: "ForMedia=YES, media client (2018 docs example)", globals: mediaYES, client: .media),
        ListedRow(label: "InWebContent=YES, webkit client", globals: webYES, client: .webkit),
        ListedRow(label: "NSAllowsLocalNetworking=YES, urlsession client", globals: localYES, client: .urlsession),
        ListedRow(label: "NSAllowsArbitraryLoads=YES, urlsession client", globals: aal, client: .urlsession),
    ]

    @Test("§1.3: a global key does not relax a listed domain", arguments: listedRows)
    func globalsIgnoredForListedDomain(row: ListedRow) throws {
        let policy = try policy(row.globals + ATSSpec.exceptionDomains(ATSSpec.domain("cdn.example.com")))
        #expect(try cleartextAllowed(policy, host: "cdn.example.com", client: row.client) == false)
        #expect(try policy.requirements(forHost: "cdn.example.com", clientClass: row.client).rule.kind == .exception)
    }

    // MARK: - Items 8–10: what one per-domain key changes, and what it leaves alone

    @Test("Item 8: only NSExceptionRequiresForwardSecrecy=NO: TLS 1.2 still required, http:// still blocked")
    func forwardSecrecyOnly() throws {
        let policy = try policy(ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.forwardSecrecyNO)))
        let requirements = try policy.requirements(forHost: "example.com")
        #expect(requirements.rule.kind == .exception)
        #expect(requirements.cleartextAllowed == false)
        #expect(requirements.atsMinimumsApply)
        #expect(requirements.minimumTLSVersion == .tls12)
        #expect(requirements.requiresForwardSecrecy == false)
        // Only NSExceptionAllowsInsecureHTTPLoads (or ATS off) lets the app loosen trust
        // (Apple: NSExceptionAllowsInsecureHTTPLoads).
        #expect(requirements.appMayOverrideTrust == false)
        #expect(try cleartextAllowed(policy, host: "example.com") == false)
        #expect(violationNames(try verdict(policy, observed: tls12(0xC013, version: .tls11))) == ["tls_version"])
        // The point of the key: an RSA key-exchange suite now passes.
        #expect(try verdict(policy, observed: tls12(0x009C)).isCompliant)
    }

    @Test("Item 9: only NSExceptionAllowsInsecureHTTPLoads=YES: http:// OK, HTTPS still TLS 1.2 + FS + trust")
    func insecureHTTPOnly() throws {
        let policy = try policy(ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.insecureYES)))
        #expect(try cleartextAllowed(policy, host: "example.com"))
        let requirements = try policy.requirements(forHost: "example.com")
        #expect(requirements.minimumTLSVersion == .tls12)
        #expect(requirements.requiresForwardSecrecy)
        #expect(requirements.appMayOverrideTrust)
        #expect(violationNames(try verdict(policy, observed: tls12(0xC013, version: .tls11))) == ["tls_version"])
        #expect(violationNames(try verdict(policy, observed: tls12(0x009C))) == ["cipher_not_fs"])
        // A self-signed certificate still fails by default (docs/ats-rules.md, "The decisions").
        let selfSigned = connection(
            chain: [leaf(selfSigned: true)], trust: .untrusted(reason: "self-signed certificate"))
        let result = try verdict(policy, observed: selfSigned)
        #expect(violationNames(result) == ["untrusted_chain"])
        #expect(result.isCompliant == false)
    }

    @Test(
        "Item 9 / §3.6: with assume_app_overrides_trust the self-signed certificate passes, the TLS floor does not move"
    )
    func insecureHTTPWithTrustOverride() throws {
        let policy = try policy(
            ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.insecureYES)),
            settings: settings(assumeAppOverridesTrust: true))
        let selfSigned = connection(
            chain: [leaf(selfSigned: true)], trust: .untrusted(reason: "self-signed certificate"))
        #expect(try verdict(policy, observed: selfSigned).isCompliant)
        let oldTLS = connection(
            version: .tls11, suite: 0xC013, chain: [leaf(selfSigned: true)], trust: .untrusted(reason: "self-signed"))
        #expect(violationNames(try verdict(policy, observed: oldTLS)) == ["tls_version"])
    }

    @Test("Item 10: insecure HTTP + TLSv1.3: http:// allowed, HTTPS must be TLS 1.3 with forward secrecy")
    func insecureHTTPWithTLS13() throws {
        let policy = try policy(
            ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.insecureYES + ATSSpec.minimumTLS("TLSv1.3")))
        )
        #expect(try cleartextAllowed(policy, host: "example.com"))
        let requirements = try policy.requirements(forHost: "example.com")
        #expect(requirements.minimumTLSVersion == .tls13)
        #expect(requirements.requiresForwardSecrecy)
        let tls12Result = try verdict(policy, observed: tls12(0xC02F))
        #expect(violationNames(tls12Result) == ["tls_version"])
        #expect(tls12Result.error?.nsurl == -1200)
        #expect(try verdict(policy, observed: connection(version: .tls13, suite: 0x1302)).isCompliant)
    }

    // MARK: - Per-domain wrong types and values (Apple open source: SecProtocolConfiguration.m)

    struct DomainValueRow: ATSSpecRow {
        let label: String
        let body: String
        let cleartextAllowed: Bool
        let minimumTLS: TLSVersion
        let forwardSecrecy: Bool
    }

    static let domainValueRows: [DomainValueRow] =
        [
            DomainValueRow(
                label: "empty entry: the defaults", body: "", cleartextAllowed: false, minimumTLS: .tls12,
                forwardSecrecy: true),
            DomainValueRow(
                label: "insecure HTTP \"YES\" (string): default NO",
                body: "<key>NSExceptionAllowsInsecureHTTPLoads</key><string>YES</string>", cleartextAllowed: false,
                minimumTLS: .tls12, forwardSecrecy: true),
            DomainValueRow(
                label: "forward secrecy \"NO\" (string): default YES",
                body: "<key>NSExceptionRequiresForwardSecrecy</key><string>NO</string>", cleartextAllowed: false,
                minimumTLS: .tls12, forwardSecrecy: true),
            DomainValueRow(
                label: "forward secrecy <date>: default YES",
                body: "<key>NSExceptionRequiresForwardSecrecy</key><date>2020-01-01T00:00:00Z</date>",
                cleartextAllowed: false,
                minimumTLS: .tls12, forwardSecrecy: true),
            DomainValueRow(
                label: "minimum TLS as a real 1.0: default TLSv1.2",
                body: "<key>NSExceptionMinimumTLSVersion</key><real>1.0</real>", cleartextAllowed: false,
                minimumTLS: .tls12,
                forwardSecrecy: true),
            DomainValueRow(
                label: "minimum TLS as an array: default TLSv1.2",
                body: "<key>NSExceptionMinimumTLSVersion</key><array><string>TLSv1.0</string></array>",
                cleartextAllowed: false, minimumTLS: .tls12, forwardSecrecy: true),
        ]
        + [("TLSv1.0", TLSVersion.tls10), ("TLSv1.1", .tls11), ("TLSv1.2", .tls12), ("TLSv1.3", .tls13)].map {
            DomainValueRow(
                label: "minimum TLS \"\($0.0)\": accepted", body: ATSSpec.minimumTLS($0.0), cleartextAllowed: false,
                minimumTLS: $0.1, forwardSecrecy: true)
        }
        // Exact, case-sensitive strings; anything else leaves the floor at TLS 1.2
        // (the values Apple's SecProtocolConfigurationTest.m tries).
        + ["TLSv1.4", "TLSV1.3", "TLSv1.00", "TLSv1.31", "SSLv3.0", "1.0", "tlsv1.0", "TLSv1", " TLSv1.0", ""].map {
            DomainValueRow(
                label: "minimum TLS \"\($0)\": invalid, floor stays TLSv1.2", body: ATSSpec.minimumTLS($0),
                cleartextAllowed: false, minimumTLS: .tls12, forwardSecrecy: true)
        }
        + [
            DomainValueRow(
                label: "all three keys set",
                body: ATSSpec.insecureYES + ATSSpec.forwardSecrecyNO + ATSSpec.minimumTLS("TLSv1.1"),
                cleartextAllowed: true, minimumTLS: .tls11, forwardSecrecy: false)
        ]

    @Test("§1.5: per-domain values and wrong types", arguments: domainValueRows)
    func domainValues(row: DomainValueRow) throws {
        let policy = try policy(ATSSpec.exceptionDomains(ATSSpec.domain("example.com", row.body)))
        let requirements = try policy.requirements(forHost: "example.com")
        #expect(requirements.rule.kind == .exception)
        #expect(requirements.cleartextAllowed == row.cleartextAllowed)
        #expect(requirements.minimumTLSVersion == row.minimumTLS)
        #expect(requirements.requiresForwardSecrecy == row.forwardSecrecy)
        #expect(try cleartextAllowed(policy, host: "example.com") == row.cleartextAllowed)
    }

    @Test("§1.5: an invalid minimum-TLS string does not let TLS 1.0 through, and check reports it")
    func invalidTLSStringBlocksOldTLS() throws {
        let policy = try policy(ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.minimumTLS("1.0"))))
        #expect(violationNames(try verdict(policy, observed: tls12(0xC013, version: .tls10))) == ["tls_version"])
        #expect(policy.findings.contains { $0.path.description.contains("NSExceptionMinimumTLSVersion") })
    }

    @Test("§1.5: NSIncludesSubdomains \"YES\" (string) gets the default NO")
    func stringSubdomainsIsNo() throws {
        let policy = try policy(
            ATSSpec.exceptionDomains(
                ATSSpec.domain(
                    "example.com", "<key>NSIncludesSubdomains</key><string>YES</string>" + ATSSpec.insecureYES)))
        #expect(try cleartextAllowed(policy, host: "example.com"))
        #expect(try cleartextAllowed(policy, host: "a.example.com") == false)
        #expect(try policy.requirements(forHost: "a.example.com").rule.kind == .default)
    }

    @Test("§1.5: an entry whose value is not a dictionary is skipped (host treated as unlisted)")
    func nonDictionaryEntrySkipped() throws {
        let entry = "<key>NSExceptionDomains</key><dict><key>invalid.exception.com</key><string></string></dict>"
        let plain = try policy(entry)
        let plainRequirements = try plain.requirements(forHost: "invalid.exception.com")
        #expect(plainRequirements.rule.kind == .default)
        #expect(plainRequirements.minimumTLSVersion == .tls12)
        #expect(plainRequirements.requiresForwardSecrecy)
        // Skipped, not an empty entry: NSAllowsArbitraryLoads still reaches the host.
        let withGlobal = try policy(Self.aal + entry)
        #expect(try withGlobal.requirements(forHost: "invalid.exception.com").rule.kind == .arbitraryLoads)
        #expect(withGlobal.findings.contains { $0.path.description.contains("invalid.exception.com") })
    }

    @Test("§1.5: NSExceptionDomains as an array is reported")
    func exceptionDomainsArrayReported() throws {
        let policy = try policy(Self.aal + "<key>NSExceptionDomains</key><array><string>example.com</string></array>")
        #expect(policy.exceptions.isEmpty)
        #expect(policy.allowsArbitraryLoads == .present(true))
        #expect(
            policy.findings.contains { $0.path.description.contains("NSExceptionDomains") && $0.severity == .error })
    }

    // MARK: - Info.plist roots (Apple: NSAppTransportSecurity is a dictionary)

    @Test("An Info.plist with NSAppTransportSecurity reads the same as the bare dictionary")
    func infoPlistRoot() throws {
        let policy = try infoPlistPolicy(
            "<dict>" + Self.aal + ATSSpec.exceptionDomains(ATSSpec.domain("example.com")) + "</dict>")
        #expect(try cleartextAllowed(policy, host: "other.com"))
        #expect(try cleartextAllowed(policy, host: "example.com") == false)
    }

    @Test(
        "⚠️ §1.5: NSAppTransportSecurity that is not a dictionary is rejected (the spec's proxy recommendation)",
        arguments: ["<string>YES</string>", "<true/>", "<array/>"])
    func atsNotADictionaryRejected(value: String) {
        #expect(throws: PolicyLoadError.self) { try infoPlistPolicy(value) }
    }

    // MARK: - Legacy keys (docs/ats-rules.md, "The decisions": legacy_keys = ignore | honor)

    struct LegacyRow: ATSSpecRow {
        let label: String
        let body: String
        let handling: LegacyKeyHandling
        let cleartextAllowed: Bool
        let minimumTLS: TLSVersion
        let forwardSecrecy: Bool
    }

    static let legacyRows: [LegacyRow] = [LegacyKeyHandling.ignore, .honor].flatMap { handling -> [LegacyRow] in
        let honor = handling == .honor
        return [
            LegacyRow(
                label: "NSTemporaryExceptionAllowsInsecureHTTPLoads=YES",
                body: "<key>NSTemporaryExceptionAllowsInsecureHTTPLoads</key><true/>", handling: handling,
                cleartextAllowed: honor, minimumTLS: .tls12, forwardSecrecy: true),
            LegacyRow(
                label: "NSThirdPartyExceptionAllowsInsecureHTTPLoads=YES",
                body: "<key>NSThirdPartyExceptionAllowsInsecureHTTPLoads</key><true/>", handling: handling,
                cleartextAllowed: honor, minimumTLS: .tls12, forwardSecrecy: true),
            LegacyRow(
                label: "NSTemporaryExceptionMinimumTLSVersion=TLSv1.0",
                body: "<key>NSTemporaryExceptionMinimumTLSVersion</key><string>TLSv1.0</string>", handling: handling,
                cleartextAllowed: false, minimumTLS: honor ? .tls10 : .tls12, forwardSecrecy: true),
            LegacyRow(
                label: "NSThirdPartyExceptionMinimumTLSVersion=TLSv1.1",
                body: "<key>NSThirdPartyExceptionMinimumTLSVersion</key><string>TLSv1.1</string>", handling: handling,
                cleartextAllowed: false, minimumTLS: honor ? .tls11 : .tls12, forwardSecrecy: true),
            LegacyRow(
                label: "NSTemporaryExceptionRequiresForwardSecrecy=NO",
                body: "<key>NSTemporaryExceptionRequiresForwardSecrecy</key><false/>", handling: handling,
                cleartextAllowed: false, minimumTLS: .tls12, forwardSecrecy: !honor),
            LegacyRow(
                label: "NSThirdPartyExceptionRequiresForwardSecrecy=NO",
                body: "<key>NSThirdPartyExceptionRequiresForwardSecrecy</key><false/>", handling: handling,
                cleartextAllowed: false, minimumTLS: .tls12, forwardSecrecy: !honor),
            // The NSException* key wins when both are set, in either order.
            LegacyRow(
                label: "legacy insecure=YES before NSException insecure=NO",
                body: "<key>NSTemporaryExceptionAllowsInsecureHTTPLoads</key><true/>" + ATSSpec.insecureNO,
                handling: handling, cleartextAllowed: false, minimumTLS: .tls12, forwardSecrecy: true),
            LegacyRow(
                label: "NSException insecure=NO before legacy insecure=YES",
                body: ATSSpec.insecureNO + "<key>NSThirdPartyExceptionAllowsInsecureHTTPLoads</key><true/>",
                handling: handling, cleartextAllowed: false, minimumTLS: .tls12, forwardSecrecy: true),
            LegacyRow(
                label: "legacy TLSv1.0 with NSException TLSv1.3",
                body: ATSSpec.minimumTLS("TLSv1.3")
                    + "<key>NSTemporaryExceptionMinimumTLSVersion</key><string>TLSv1.0</string>",
                handling: handling, cleartextAllowed: false, minimumTLS: .tls13, forwardSecrecy: true),
            // electron-builder's value is invalid even when aliases are honoured
            // (Apple: NSExceptionMinimumTLSVersion).
            LegacyRow(
                label: "electron-builder's NSTemporaryExceptionMinimumTLSVersion=\"1.0\"",
                body: "<key>NSTemporaryExceptionAllowsInsecureHTTPLoads</key><true/>"
                    + "<key>NSTemporaryExceptionMinimumTLSVersion</key><string>1.0</string>",
                handling: handling, cleartextAllowed: honor, minimumTLS: .tls12, forwardSecrecy: true),
        ].map {
            LegacyRow(
                label: "\($0.label) [legacy_keys=\(handling.rawValue)]", body: $0.body, handling: $0.handling,
                cleartextAllowed: $0.cleartextAllowed, minimumTLS: $0.minimumTLS, forwardSecrecy: $0.forwardSecrecy)
        }
    }

    @Test("Decisions table: NSTemporary*/NSThirdParty* keys per legacy_keys", arguments: legacyRows)
    func legacyKeys(row: LegacyRow) throws {
        let policy = try policy(
            ATSSpec.exceptionDomains(ATSSpec.domain("localhost.example.com", row.body)),
            settings: settings(legacyKeys: row.handling))
        let requirements = try policy.requirements(forHost: "localhost.example.com")
        #expect(requirements.cleartextAllowed == row.cleartextAllowed)
        #expect(requirements.minimumTLSVersion == row.minimumTLS)
        #expect(requirements.requiresForwardSecrecy == row.forwardSecrecy)
    }

    struct LegacyFindingRow: ATSSpecRow {
        let label: String
        let legacyKey: String
        let value: String
        let replacement: String
    }

    static let legacyFindingRows: [LegacyFindingRow] = [
        LegacyFindingRow(
            label: "NSTemporaryExceptionAllowsInsecureHTTPLoads",
            legacyKey: "NSTemporaryExceptionAllowsInsecureHTTPLoads",
            value: "<true/>", replacement: "NSExceptionAllowsInsecureHTTPLoads"),
        LegacyFindingRow(
            label: "NSTemporaryExceptionMinimumTLSVersion", legacyKey: "NSTemporaryExceptionMinimumTLSVersion",
            value: "<string>TLSv1.0</string>", replacement: "NSExceptionMinimumTLSVersion"),
        LegacyFindingRow(
            label: "NSTemporaryExceptionRequiresForwardSecrecy",
            legacyKey: "NSTemporaryExceptionRequiresForwardSecrecy",
            value: "<false/>", replacement: "NSExceptionRequiresForwardSecrecy"),
        LegacyFindingRow(
            label: "NSThirdPartyExceptionAllowsInsecureHTTPLoads",
            legacyKey: "NSThirdPartyExceptionAllowsInsecureHTTPLoads",
            value: "<true/>", replacement: "NSExceptionAllowsInsecureHTTPLoads"),
        LegacyFindingRow(
            label: "NSThirdPartyExceptionMinimumTLSVersion", legacyKey: "NSThirdPartyExceptionMinimumTLSVersion",
            value: "<string>TLSv1.0</string>", replacement: "NSExceptionMinimumTLSVersion"),
        LegacyFindingRow(
            label: "NSThirdPartyExceptionRequiresForwardSecrecy",
            legacyKey: "NSThirdPartyExceptionRequiresForwardSecrecy",
            value: "<false/>", replacement: "NSExceptionRequiresForwardSecrecy"),
    ]

    @Test(
        "Decisions table: with legacy_keys=ignore, check warns and names the NSException* key",
        arguments: legacyFindingRows)
    func legacyKeyWarning(row: LegacyFindingRow) throws {
        let policy = try policy(
            ATSSpec.exceptionDomains(ATSSpec.domain("example.com", "<key>\(row.legacyKey)</key>\(row.value)")))
        let finding = try #require(policy.findings.first { $0.path.description.contains(row.legacyKey) })
        #expect(finding.severity == .warning)
        #expect((finding.message + " " + (finding.fix ?? "")).contains(row.replacement))
    }

    // MARK: - NSRequiresCertificateTransparency (docs/ats-rules.md, "The decisions": parsed, no effect, obsolete)

    @Test("NSRequiresCertificateTransparency=YES has no effect of its own, and check calls it obsolete")
    func certificateTransparencyKeyIsObsolete() throws {
        let withKey = try policy(
            ATSSpec.exceptionDomains(
                ATSSpec.domain("example.com", "<key>NSRequiresCertificateTransparency</key><true/>")))
        let without = try policy(ATSSpec.exceptionDomains(ATSSpec.domain("example.com")))
        let a = try withKey.requirements(forHost: "example.com")
        let b = try without.requirements(forHost: "example.com")
        #expect(a.cleartextAllowed == b.cleartextAllowed)
        #expect(a.minimumTLSVersion == b.minimumTLSVersion)
        #expect(a.requiresForwardSecrecy == b.requiresForwardSecrecy)
        #expect(a.offeredTLS12Suites == b.offeredTLS12Suites)
        // A chain to a user-installed root is exempt from CT (Apple open source: SecPolicyServer.c): the key does
        // not change that.
        let userRoot = connection(trust: .userInstalledRoot, embeddedSCTs: 0)
        #expect(try verdict(withKey, observed: userRoot).isCompliant)
        let finding = try #require(
            withKey.findings.first { $0.path.description.contains("NSRequiresCertificateTransparency") })
        #expect(finding.message.lowercased().contains("obsolete"))
    }

    // MARK: - Apple's built-in exceptions (SecProtocolConfiguration.m; off by default: docs/ats-rules.md)

    struct BuiltinRow: ATSSpecRow {
        let label: String
        let host: String
        let xml: String
        let builtins: Bool
        let cleartextAllowed: Bool
        let minimumTLS: TLSVersion?
    }

    static let builtinRows: [BuiltinRow] = [
        BuiltinRow(
            label: "off by default: apple.com gets full ATS", host: "apple.com", xml: "", builtins: false,
            cleartextAllowed: false, minimumTLS: .tls12),
        BuiltinRow(
            label: "on: apple.com", host: "apple.com", xml: "", builtins: true, cleartextAllowed: true,
            minimumTLS: .tls12),
        BuiltinRow(
            label: "on: www.apple.com (subdomains)", host: "www.apple.com", xml: "", builtins: true,
            cleartextAllowed: true, minimumTLS: .tls12),
        BuiltinRow(
            label: "on: ls.apple.com TLS 1.0", host: "ls.apple.com", xml: "", builtins: true, cleartextAllowed: true,
            minimumTLS: .tls10),
        BuiltinRow(
            label: "on: gs.apple.com TLS 1.0", host: "gs.apple.com", xml: "", builtins: true, cleartextAllowed: true,
            minimumTLS: .tls10),
        BuiltinRow(
            label: "on: a.geo.apple.com TLS 1.0", host: "a.geo.apple.com", xml: "", builtins: true,
            cleartextAllowed: true, minimumTLS: .tls10),
        BuiltinRow(
            label: "on: is.autonavi.com TLS 1.0", host: "is.autonavi.com", xml: "", builtins: true,
            cleartextAllowed: true, minimumTLS: .tls10),
        BuiltinRow(
            label: "on: apple-mapkit.com TLS 1.0", host: "apple-mapkit.com", xml: "", builtins: true,
            cleartextAllowed: true, minimumTLS: .tls10),
        BuiltinRow(
            label: "on: setup.icloud.com TLS 1.2", host: "setup.icloud.com", xml: "", builtins: true,
            cleartextAllowed: true, minimumTLS: .tls12),
        BuiltinRow(
            label: "on: icloud.com is not built in", host: "icloud.com", xml: "", builtins: true,
            cleartextAllowed: false, minimumTLS: .tls12),
        BuiltinRow(
            label: "on: the app's own apple.com entry overrides the built-in one", host: "apple.com",
            xml: ATSSpec.exceptionDomains(ATSSpec.domain("apple.com")), builtins: true, cleartextAllowed: false,
            minimumTLS: .tls12),
    ]

    @Test("§2.6: Apple's built-in exceptions", arguments: builtinRows)
    func builtinExceptions(row: BuiltinRow) throws {
        let policy = try policy(row.xml, settings: settings(builtinExceptions: row.builtins))
        let requirements = try policy.requirements(forHost: row.host)
        #expect(requirements.cleartextAllowed == row.cleartextAllowed)
        #expect(requirements.minimumTLSVersion == row.minimumTLS)
        if row.builtins && row.cleartextAllowed {
            // Every built-in entry has forward secrecy not required.
            #expect(requirements.requiresForwardSecrecy == false)
        }
    }
}
