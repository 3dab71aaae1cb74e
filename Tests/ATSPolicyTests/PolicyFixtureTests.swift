import ATSPolicy
import Foundation
import Testing

/// Each policy fixture exists as XML and as binary (made by plistlib, see
/// Fixtures/make-binary-fixtures.py): both forms must give the same findings and the same answers.
@Suite("Policy fixtures in XML and binary form")
struct PolicyFixtureTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/policies").path

    static let hosts = [
        "example.com", "a.b.example.com", "secure.example.com", "x.secure.example.com", "old.example.net",
        "api.example.com", "198.51.100.1", "198.51.100.200", "2001:db8::5", "printer.local", "localhost",
        "legacy.example.com", "cdn.images.example.com", "203.0.113.9", "unlisted.org",
    ]

    static func load(_ name: String, _ suffix: String, _ profile: OSProfile) throws -> PolicyLoader.Loaded {
        try PolicyLoader.load(path: "\(folder)/\(name).\(suffix)", settings: PolicySettings(osProfile: profile))
    }

    @Test("XML and binary twins agree", arguments: ["lab-ats", "shop-Info", "web-content-only"], OSProfile.allCases)
    func twins(_ name: String, _ profile: OSProfile) throws {
        let xml = try Self.load(name, "xml", profile)
        let binary = try Self.load(name, "bplist", profile)
        #expect(xml.format == .xml)
        #expect(binary.format == .binary)
        #expect(xml.sha256 != binary.sha256)
        #expect(
            xml.policy.findings.map { "\($0.code) \($0.path)" }
                == binary.policy.findings.map { "\($0.code) \($0.path)" })
        for host in Self.hosts {
            for scheme in URLScheme.allCases {
                for client in ClientClass.allCases {
                    let a = try xml.policy.requirements(forHost: host, scheme: scheme, clientClass: client)
                    let b = try binary.policy.requirements(forHost: host, scheme: scheme, clientClass: client)
                    #expect(a == b, "\(name) \(host) \(scheme) \(client)")
                }
            }
        }
    }

    @Test("the lab policy: exceptions by name and range, legacy key ignored, pins unioned")
    func labPolicy() throws {
        let policy = try Self.load("lab-ats", "bplist", .ios17).policy
        func rule(_ host: String, _ scheme: URLScheme = .https) throws -> (RuleSource, Requirements) {
            let requirements = try policy.requirements(forHost: host, scheme: scheme)
            return (requirements.rule, requirements)
        }
        #expect(try rule("a.b.example.com").0 == RuleSource(kind: .exception, key: "example.com"))
        #expect(try rule("secure.example.com").1.minimumTLSVersion == .tls13)
        #expect(try rule("x.secure.example.com").0.key == "example.com")
        // The NSTemporary key is ignored; integer 0 turns forward secrecy off.
        let old = try rule("old.example.net").1
        #expect(old.minimumTLSVersion == .tls12)
        #expect(old.requiresForwardSecrecy == false)
        #expect(try rule("198.51.100.1", .http).1.cleartextAllowed == false)  // the /27 wins
        #expect(try rule("198.51.100.200", .http).1.cleartextAllowed == true)
        #expect(try rule("printer.local", .http).1.cleartextAllowed == false)  // the entry beats the local default
        #expect(try rule("203.0.113.9", .http).1.cleartextAllowed == false)  // arbitrary loads cancelled
        let pins = try #require(try rule("api.example.com").1.pins)
        #expect(pins.domains == ["api.example.com", "example.com"])
        #expect(pins.leafIdentities?.count == 1)
        #expect(pins.caIdentities?.count == 1)
        #expect(try policy.requirements(forHost: "api.example.com", clientClass: .webkit).pins == nil)
        let codes = Set(policy.findings.map(\.code))
        #expect(
            codes.isSuperset(of: ["legacy_key", "number_for_boolean", "malformed_pin", "arbitrary_loads_cancelled"]))
    }
}
