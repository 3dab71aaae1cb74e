import ATSPolicy
import Testing

/// What a verdict tells the user beyond the violation names: the key that would allow it, the
/// error the app sees first, and the JSON form the log and the CLI share.
@Suite("Verdict details")
struct VerdictDetailTests: ATSSpecFixture {
    @Test("each fixable violation names the Info.plist setting for the matched entry", arguments: [
        ("TLS 1.0 server", UInt16(0xC013), TLSVersion.tls10, "tls_version",
         #"NSExceptionDomains["example.com"].NSExceptionMinimumTLSVersion = TLSv1.0"#),
        ("RSA key exchange", 0x009C, .tls12, "cipher_not_fs",
         #"NSExceptionDomains["example.com"].NSExceptionRequiresForwardSecrecy = NO"#),
        ("3DES", 0x000A, .tls12, "cipher_not_ats",
         #"NSExceptionDomains["example.com"].NSExceptionRequiresForwardSecrecy = NO with NSExceptionAllowsInsecureHTTPLoads = YES"#),
    ])
    func allowedBy(_ label: String, _ suite: UInt16, _ version: TLSVersion, _ name: String, _ key: String) throws {
        let result = try verdict(try policy(""), observed: tls12(suite, version: version))
        let violation = try #require(result.violations.first { $0.kind.name == name }, "\(label)")
        #expect(violation.allowedBy == key, "\(label)")
        #expect(!violation.explanation.isEmpty)
    }

    @Test("a subdomain's fix goes into the entry that matched it")
    func fixGoesIntoMatchedEntry() throws {
        let policy = try policy(ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.subdomainsYES)))
        let result = try verdict(policy, host: "api.example.com", observed: tls12(0xC013, host: "api.example.com", version: .tls11))
        #expect(result.violations.first?.allowedBy == #"NSExceptionDomains["example.com"].NSExceptionMinimumTLSVersion = TLSv1.1"#)
    }

    @Test("DHE and trust failures have no allowing key")
    func unfixable() throws {
        let dhe = try verdict(try policy(""), observed: tls12(0x009E))
        #expect(dhe.violations.map(\.kind.name) == ["cipher_not_ats"])
        #expect(dhe.violations.first?.allowedBy == nil)
        let expired = connection(leaf: leaf(notBefore: ATSSpec.now - 100 * ATSSpec.day, lifetimeDays: 90))
        let result = try verdict(try policy(""), observed: expired)
        #expect(result.violations.map(\.kind.name) == ["expired"])
        #expect(result.violations.first?.allowedBy == nil)
        #expect(result.error == AppleError(nsurl: -1201, ssl: -9814))
    }

    @Test("iOS 26 fails TLS 1.0 even with arbitrary loads; other profiles allow it")
    func ios26SystemFloor() throws {
        for (profile, failing) in [(OSProfile.ios17, false), (.ios26, true)] {
            let policy = try policy(ATSSpec.arbitraryLoadsYES, settings: settings(profile))
            let result = try verdict(policy, observed: tls12(0xC013, version: .tls10))
            #expect(result.violations.map(\.kind.name) == (failing ? ["tls_version"] : []), "\(profile)")
            #expect(result.violations.first?.allowedBy == nil)
        }
    }

    @Test("violations come in vocabulary order and the first one's error is the connection's")
    func order() throws {
        let weak = leaf(keyBits: 1024, hash: .sha1, dnsNames: ["other.example.net"])
        let result = try verdict(try policy(""), observed: connection(version: .tls10, suite: 0x002F, leaf: weak))
        #expect(result.violations.map(\.kind.name) == ["tls_version", "cipher_not_fs", "key_size", "sig_hash_leaf", "name_mismatch"])
        #expect(result.error == AppleError(nsurl: -1200, ssl: -9836))
        #expect(result.violations.first { $0.kind.name == "key_size" }?.error == AppleError(nsurl: -1200, ssl: -9883))
    }

    @Test("certificate failures where ATS is off are plain trust failures")
    func trustCodesWithoutATS() throws {
        let policy = try policy(ATSSpec.arbitraryLoadsYES)
        let result = try verdict(policy, observed: connection(leaf: leaf(keyBits: 1024)))
        #expect(result.violations.map(\.kind.name) == ["key_size"])
        #expect(result.error == AppleError(nsurl: -1202, ssl: -9807))
    }

    @Test("the verdict's JSON carries names, codes and details")
    func json() throws {
        let result = try verdict(try policy(""), host: "example.com", scheme: .http)
        let json = result.json
        #expect(json["compliant"] == .bool(false))
        #expect(json["violations"] == .array([.string("cleartext")]))
        #expect(json["error"] == .object([("nsurl", .int(-1022)), ("ssl", .null)]))
        #expect(json["rule"] == .object([("kind", .string("default")), ("key", .null)]))
    }
}
