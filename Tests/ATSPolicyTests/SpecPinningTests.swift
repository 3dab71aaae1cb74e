import ATSPolicy
import Testing

/// `NSPinnedDomains`, cases Item 42–48 (Apple: NSPinnedDomains; Apple open source: SecPolicy.c;
/// docs/ats-rules.md, "The decisions": pins reach one label down).
@Suite("Spec §7.42–48: NSPinnedDomains")
struct SpecPinningTests: ATSSpecFixture {
    static let leafKey = ATSSpec.leafKey
    static let intermediateKey = ATSSpec.intermediateKey
    static let rootKey = ATSSpec.rootKey
    static let otherKey = ATSSpec.otherKey

    static func pinned(_ entries: String) -> String { "<key>NSPinnedDomains</key><dict>\(entries)</dict>" }
    static func leafPins(_ seeds: UInt8...) -> String {
        "<key>NSPinnedLeafIdentities</key>" + ATSSpec.identities(seeds)
    }
    static func caPins(_ seeds: UInt8...) -> String { "<key>NSPinnedCAIdentities</key>" + ATSSpec.identities(seeds) }
    static func entry(_ host: String, _ body: String) -> String { "<key>\(host)</key><dict>\(body)</dict>" }

    enum Chain: Sendable {
        /// leaf → intermediate → root, the leaf with this SPKI.
        case standard(leaf: UInt8)
        /// A bare self-signed leaf trusted as a user-installed root: a path of one certificate.
        case selfSignedOnly(UInt8)
    }

    func observed(_ chain: Chain, host: String = "example.com") -> ObservedConnection {
        switch chain {
        case .standard(let key):
            return connection(host: host, leaf: leaf(for: host, spki: key))
        case .selfSignedOnly(let key):
            return connection(
                host: host, chain: [leaf(for: host, spki: key, selfSigned: true)], trust: .userInstalledRoot)
        }
    }

    // MARK: - Items 42–44: what a pin entry demands of example.com

    struct PinRow: ATSSpecRow {
        let label: String
        let body: String
        let chain: Chain
        /// Whether example.com counts as pinned at all.
        let pinned: Bool
        let mismatch: Bool
    }

    static let leafChain = Chain.standard(leaf: leafKey)

    static let pinRows: [PinRow] = [
        // 42: leaf pins.
        PinRow(label: "42: leaf pin matches", body: leafPins(leafKey), chain: leafChain, pinned: true, mismatch: false),
        PinRow(
            label: "42: leaf pin mismatch", body: leafPins(otherKey), chain: leafChain, pinned: true, mismatch: true),
        PinRow(
            label: "42: leaf pin, second entry matches", body: leafPins(otherKey, leafKey), chain: leafChain,
            pinned: true, mismatch: false),
        PinRow(
            label: "42: leaf pin naming the intermediate's key", body: leafPins(intermediateKey), chain: leafChain,
            pinned: true, mismatch: true),
        // 42: CA pins, checked at index ≥ 1 of the validated path.
        PinRow(
            label: "42: CA pin matches the intermediate", body: caPins(intermediateKey), chain: leafChain, pinned: true,
            mismatch: false),
        PinRow(
            label: "42: CA pin matches the root the server did not send (per code)", body: caPins(rootKey),
            chain: leafChain, pinned: true, mismatch: false),
        PinRow(
            label: "42: CA pin naming the leaf's key", body: caPins(leafKey), chain: leafChain, pinned: true,
            mismatch: true),
        PinRow(label: "42: CA pin mismatch", body: caPins(otherKey), chain: leafChain, pinned: true, mismatch: true),
        PinRow(
            label: "42: CA pin on a bare self-signed leaf (path < 2)", body: caPins(leafKey),
            chain: .selfSignedOnly(leafKey), pinned: true, mismatch: true),
        // 43: both arrays must match.
        PinRow(
            label: "43: leaf and CA pins both match", body: leafPins(leafKey) + caPins(intermediateKey),
            chain: leafChain, pinned: true, mismatch: false),
        PinRow(
            label: "43: leaf matches, CA does not", body: leafPins(leafKey) + caPins(otherKey), chain: leafChain,
            pinned: true, mismatch: true),
        PinRow(
            label: "43: CA matches, leaf does not", body: leafPins(otherKey) + caPins(rootKey), chain: leafChain,
            pinned: true, mismatch: true),
        // 44: fail closed.
        PinRow(
            label: "44: empty leaf array", body: "<key>NSPinnedLeafIdentities</key><array/>", chain: leafChain,
            pinned: true, mismatch: true),
        PinRow(
            label: "44: empty CA array", body: "<key>NSPinnedCAIdentities</key><array/>", chain: leafChain,
            pinned: true, mismatch: true),
        PinRow(
            label: "44: leaf array of strings (not dictionaries)",
            body: "<key>NSPinnedLeafIdentities</key><array><string>\(ATSSpec.spkiBase64(leafKey))</string></array>",
            chain: leafChain, pinned: true, mismatch: true),
        PinRow(
            label: "44: item without SPKI-SHA256-BASE64",
            body:
                "<key>NSPinnedLeafIdentities</key><array><dict><key>SPKI-SHA256</key><string>\(ATSSpec.spkiBase64(leafKey))</string></dict></array>",
            chain: leafChain, pinned: true, mismatch: true),
        PinRow(
            label: "44: invalid base64",
            body:
                "<key>NSPinnedLeafIdentities</key><array><dict><key>SPKI-SHA256-BASE64</key><string>not base64!</string></dict></array>",
            chain: leafChain, pinned: true, mismatch: true),
        PinRow(
            label: "44: SPKI given as <data>, not a string",
            body:
                "<key>NSPinnedLeafIdentities</key><array><dict><key>SPKI-SHA256-BASE64</key><data>\(ATSSpec.spkiBase64(leafKey))</data></dict></array>",
            chain: leafChain, pinned: true, mismatch: true),
        PinRow(
            label: "44: CA identities given as a string, not an array",
            body: "<key>NSPinnedCAIdentities</key><string>\(ATSSpec.spkiBase64(intermediateKey))</string>",
            chain: leafChain, pinned: true, mismatch: true),
        PinRow(
            label: "44: one malformed item and one valid item: the valid one counts",
            body:
                "<key>NSPinnedLeafIdentities</key><array><string>junk</string><dict><key>SPKI-SHA256-BASE64</key><string>\(ATSSpec.spkiBase64(leafKey))</string></dict></array>",
            chain: leafChain, pinned: true, mismatch: false),
        PinRow(
            label: "44: an entry with neither array is not pinned", body: ATSSpec.subdomainsYES, chain: leafChain,
            pinned: false, mismatch: false),
        PinRow(label: "44: an empty entry is not pinned", body: "", chain: leafChain, pinned: false, mismatch: false),
    ]

    @Test("Items 42–44: pin matching and failing closed", arguments: pinRows)
    func pins(row: PinRow) throws {
        let policy = try policy(Self.pinned(Self.entry("example.com", row.body)))
        let requirements = try policy.requirements(forHost: "example.com")
        #expect((requirements.pins != nil) == row.pinned)
        let result = policy.verdict(for: requirements, observed: observed(row.chain))
        #expect(violationNames(result) == (row.mismatch ? ["pin_mismatch"] : []))
        expectSection4Codes(result)
    }

    @Test("§1.4: pinning only tightens: a matching CA pin does not make an untrusted chain trusted")
    func pinDoesNotCreateTrust() throws {
        let policy = try policy(Self.pinned(Self.entry("example.com", Self.caPins(Self.intermediateKey))))
        let untrusted = connection(trust: .untrusted(reason: "unable to get local issuer certificate"))
        let result = try verdict(policy, observed: untrusted)
        #expect(violationNames(result) == ["untrusted_chain"])
    }

    @Test("§1.4: a pin entry whose value is not a dictionary is skipped")
    func nonDictionaryEntrySkipped() throws {
        let policy = try policy(Self.pinned("<key>example.com</key><string>pin</string>"))
        #expect(try policy.requirements(forHost: "example.com").pins == nil)
    }

    // MARK: - Item 45: subdomains, one label deep

    struct DepthRow: ATSSpecRow {
        let label: String
        let body: String
        let host: String
        let pinned: Bool
    }

    static let depthRows: [DepthRow] = [
        DepthRow(
            label: "45: the domain itself", body: ATSSpec.subdomainsYES + leafPins(otherKey), host: "example.com",
            pinned: true),
        DepthRow(
            label: "45: a.example.com is covered", body: ATSSpec.subdomainsYES + leafPins(otherKey),
            host: "a.example.com", pinned: true),
        DepthRow(
            label: "45: a.b.example.com is not covered", body: ATSSpec.subdomainsYES + leafPins(otherKey),
            host: "a.b.example.com", pinned: false),
        DepthRow(
            label: "45: x.a.b.example.com is not covered", body: ATSSpec.subdomainsYES + leafPins(otherKey),
            host: "x.a.b.example.com", pinned: false),
        DepthRow(
            label: "45: without NSIncludesSubdomains a.example.com is not covered", body: leafPins(otherKey),
            host: "a.example.com", pinned: false),
        DepthRow(
            label: "45: NSIncludesSubdomains=NO", body: ATSSpec.subdomainsNO + leafPins(otherKey),
            host: "a.example.com", pinned: false),
        DepthRow(
            label: "45: NSIncludesSubdomains=1 (integer) is not exactly true",
            body: "<key>NSIncludesSubdomains</key><integer>1</integer>" + leafPins(otherKey), host: "a.example.com",
            pinned: false),
        DepthRow(
            label: "45: NSIncludesSubdomains=\"YES\" (string) is not exactly true",
            body: "<key>NSIncludesSubdomains</key><string>YES</string>" + leafPins(otherKey), host: "a.example.com",
            pinned: false),
        DepthRow(
            label: "45: notexample.com is not a subdomain", body: ATSSpec.subdomainsYES + leafPins(otherKey),
            host: "notexample.com", pinned: false),
        // 47: trailing dot stripped, case ignored.
        DepthRow(
            label: "47: host example.com. matches entry example.com", body: leafPins(otherKey), host: "example.com.",
            pinned: true),
        DepthRow(
            label: "47: host a.example.com. matches entry example.com with subdomains",
            body: ATSSpec.subdomainsYES + leafPins(otherKey), host: "a.example.com.", pinned: true),
        DepthRow(
            label: "§1.4: host EXAMPLE.com matches entry example.com (case ignored)", body: leafPins(otherKey),
            host: "EXAMPLE.com", pinned: true),
    ]

    @Test("Items 45, 47: which hosts a pin entry for example.com reaches", arguments: depthRows)
    func depth(row: DepthRow) throws {
        let policy = try policy(Self.pinned(Self.entry("example.com", row.body)))
        let requirements = try policy.requirements(forHost: row.host)
        #expect((requirements.pins != nil) == row.pinned)
        // The pin names a key the server does not have: pinned hosts fail, others pass.
        let bare = row.host.hasSuffix(".") ? String(row.host.dropLast()) : row.host
        let result = policy.verdict(for: requirements, observed: observed(Self.leafChain, host: bare.lowercased()))
        #expect(violationNames(result) == (row.pinned ? ["pin_mismatch"] : []))
    }

    @Test("§1.4: an entry key in capitals matches the lowercase host (comparison ignores case)")
    func upperCaseEntryKey() throws {
        let policy = try policy(Self.pinned(Self.entry("Example.COM", Self.leafPins(Self.otherKey))))
        let requirements = try policy.requirements(forHost: "example.com")
        #expect(requirements.pins != nil)
        #expect(
            violationNames(policy.verdict(for: requirements, observed: observed(Self.leafChain))) == ["pin_mismatch"])
    }

    // MARK: - Item 46: every matching entry contributes

    @Test(
        "Item 46: the union of the exact and the parent entry",
        arguments: [
            (ATSSpec.leafKey, true), (ATSSpec.otherKey, true), (UInt8(0xD0), false),
        ])
    func union(leafSeed: UInt8, accepted: Bool) throws {
        let policy = try policy(
            Self.pinned(
                Self.entry("example.com", ATSSpec.subdomainsYES + Self.leafPins(Self.otherKey))
                    + Self.entry("a.example.com", Self.leafPins(Self.leafKey))))
        let requirements = try policy.requirements(forHost: "a.example.com")
        let pins = try #require(requirements.pins)
        #expect(Set(pins.domains) == ["example.com", "a.example.com"])
        let result = policy.verdict(
            for: requirements, observed: observed(.standard(leaf: leafSeed), host: "a.example.com"))
        #expect(violationNames(result) == (accepted ? [] : ["pin_mismatch"]))
    }

    @Test("Item 46: the parent alone gets only its own keys")
    func parentAlone() throws {
        let policy = try policy(
            Self.pinned(
                Self.entry("example.com", ATSSpec.subdomainsYES + Self.leafPins(Self.otherKey))
                    + Self.entry("a.example.com", Self.leafPins(Self.leafKey))))
        let requirements = try policy.requirements(forHost: "example.com")
        #expect(requirements.pins?.domains == ["example.com"])
        #expect(
            violationNames(policy.verdict(for: requirements, observed: observed(Self.leafChain))) == ["pin_mismatch"])
    }

    @Test("Item 46: a sibling entry does not contribute")
    func siblingDoesNotContribute() throws {
        let policy = try policy(
            Self.pinned(
                Self.entry("a.example.com", Self.leafPins(Self.otherKey))
                    + Self.entry("b.example.com", Self.leafPins(Self.leafKey))))
        let requirements = try policy.requirements(forHost: "a.example.com")
        #expect(
            violationNames(policy.verdict(for: requirements, observed: observed(Self.leafChain, host: "a.example.com")))
                == ["pin_mismatch"])
    }

    // MARK: - Item 48: pins apply whatever the ATS exceptions say, except in web views

    struct ClientRow: ATSSpecRow {
        let label: String
        let ats: String
        let host: String
        let client: ClientClass
        let enforced: Bool
    }

    static let clientRows: [ClientRow] = [
        ClientRow(
            label: "48: no ATS keys, urlsession", ats: "", host: "example.com", client: .urlsession, enforced: true),
        ClientRow(
            label: "48: NSAllowsArbitraryLoads=YES, urlsession", ats: ATSSpec.arbitraryLoadsYES, host: "example.com",
            client: .urlsession, enforced: true),
        ClientRow(
            label: "48: insecure-HTTP exception, urlsession",
            ats: ATSSpec.exceptionDomains(
                ATSSpec.domain("example.com", ATSSpec.insecureYES + ATSSpec.forwardSecrecyNO)),
            host: "example.com", client: .urlsession, enforced: true),
        ClientRow(
            label: "48: NSAllowsArbitraryLoads=YES, media", ats: ATSSpec.arbitraryLoadsYES, host: "example.com",
            client: .media, enforced: true),
        ClientRow(
            label: "48: InWebContent=YES, webkit: pins not applied",
            ats: "<key>NSAllowsArbitraryLoadsInWebContent</key><true/>", host: "example.com", client: .webkit,
            enforced: false),
        ClientRow(
            label: "48: no ATS keys, webkit: pins not applied", ats: "", host: "example.com", client: .webkit,
            enforced: false),
        ClientRow(
            label: "§0: a local host is pinned too", ats: "", host: "localhost", client: .urlsession, enforced: true),
    ]

    @Test("Item 48: pinning by client class and ATS exceptions", arguments: clientRows)
    func clientClass(row: ClientRow) throws {
        let policy = try policy(
            row.ats + Self.pinned(Self.entry(row.host, Self.leafPins(Self.otherKey))))
        let requirements = try policy.requirements(forHost: row.host, clientClass: row.client)
        #expect((requirements.pins != nil) == row.enforced)
        let result = policy.verdict(for: requirements, observed: observed(Self.leafChain, host: row.host))
        #expect(violationNames(result) == (row.enforced ? ["pin_mismatch"] : []))
    }

    @Test(
        "an http:// load has no TLS, so pins do not apply to it, and the explanation says so",
        arguments: [URLScheme.https, .http])
    func pinsNeedTLS(scheme: URLScheme) throws {
        let policy = try policy(
            ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.insecureYES))
                + Self.pinned(Self.entry("example.com", Self.leafPins(Self.otherKey))))
        let requirements = try policy.requirements(forHost: "example.com", scheme: scheme)
        #expect((requirements.pins != nil) == (scheme == .https))
        #expect(
            requirements.explanation.contains("NSPinnedDomains does not apply to http:// loads: there is no TLS to pin")
                == (scheme == .http))
    }
}
