import ATSPolicy
import Testing
import TextFormats

/// What a verdict tells the user beyond the violation names: the key that would allow it, the
/// error the app sees first, and the JSON form the log and the CLI share.
@Suite("Verdict details")
struct VerdictDetailTests: ATSSpecFixture {
    @Test(
        "each fixable violation names the Info.plist setting for the matched entry",
        arguments: [
            (
                "TLS 1.0 server", UInt16(0xC013), TLSVersion.tls10, "tls_version",
                #"NSExceptionDomains["example.com"].NSExceptionMinimumTLSVersion = TLSv1.0"#
            ),
            (
                "RSA key exchange", 0x009C, .tls12, "cipher_not_fs",
                #"NSExceptionDomains["example.com"].NSExceptionRequiresForwardSecrecy = NO"#
            ),
            (
                "3DES", 0x000A, .tls12, "cipher_not_ats",
                #"NSExceptionDomains["example.com"].NSExceptionRequiresForwardSecrecy = NO with NSExceptionAllowsInsecureHTTPLoads = YES"#
            ),
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
        let result = try verdict(
            policy, host: "api.example.com", observed: tls12(0xC013, host: "api.example.com", version: .tls11))
        #expect(
            result.violations.first?.allowedBy
                == #"NSExceptionDomains["example.com"].NSExceptionMinimumTLSVersion = TLSv1.1"#)
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

    @Test("iOS 26 ignores TLS 1.0 exceptions, with no key to offer; ATS-off hosts are refused TLS 1.0 too")
    func ios26Floor() throws {
        let exception = ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.minimumTLS("TLSv1.0")))
        let ios26 = try verdict(
            try policy(exception, settings: settings(.ios26)), observed: tls12(0xC013, version: .tls10))
        #expect(ios26.violations.map(\.kind.name) == ["tls_version"])
        #expect(ios26.violations.first?.allowedBy == nil)
        let ios17 = try verdict(
            try policy(exception, settings: settings(.ios17)), observed: tls12(0xC013, version: .tls10))
        #expect(ios17.isCompliant)
        let arbitrary = try verdict(
            try policy(ATSSpec.arbitraryLoadsYES, settings: settings(.ios26)), observed: tls12(0xC013, version: .tls10))
        #expect(arbitrary.violations.map(\.kind.name) == ["tls_version"])
        #expect(arbitrary.violations.first?.allowedBy == nil)
        let ssl3 = try verdict(try policy(ATSSpec.arbitraryLoadsYES), observed: tls12(0x002F, version: .ssl3))
        #expect(ssl3.violations.map(\.kind.name) == ["tls_version"])
    }

    @Test("an untrusted chain the app accepts in code still fails where ATS applies, as -1200/-9802")
    func overriddenTrustUnderATS() throws {
        let selfSigned = leaf(selfSigned: true)
        let observed = connection(chain: [selfSigned], trust: .untrusted(reason: "self-signed certificate"))
        let assumed = try policy("", settings: settings(assumeAppOverridesTrust: true))
        let underATS = try verdict(assumed, observed: observed)
        #expect(underATS.violations.map(\.kind.name) == ["untrusted_chain"])
        #expect(underATS.error == AppleError(nsurl: -1200, ssl: -9802))
        let plain = try verdict(try policy(""), observed: observed)
        #expect(plain.error == AppleError(nsurl: -1202, ssl: -9813))
        let insecureException = try policy(
            ATSSpec.exceptionDomains(ATSSpec.domain("example.com", ATSSpec.insecureYES)),
            settings: settings(assumeAppOverridesTrust: true))
        #expect(try verdict(insecureException, observed: observed).isCompliant)
    }

    @Test("CT compares notAfter − notBefore exclusively: a leaf of exactly 180 days needs 2 embedded SCTs")
    func ctLifetime() throws {
        let start = ATSSpec.now - 10 * ATSSpec.day
        let exactly180 = leaf(notBefore: start, notAfter: start + 180 * ATSSpec.day)
        let justOver = leaf(notBefore: start, notAfter: start + 180 * ATSSpec.day + 1)
        let p = try policy("")
        #expect(try verdict(p, observed: connection(leaf: exactly180, embeddedSCTs: 2)).isCompliant)
        #expect(
            try verdict(p, observed: connection(leaf: justOver, embeddedSCTs: 2)).violations.map(\.kind.name) == ["ct"])
    }

    @Test("a signature hash the TLS layer could not name is not judged")
    func unknownHash() throws {
        #expect(try verdict(try policy(""), observed: connection(leaf: leaf(hash: .unknown))).isCompliant)
    }

    @Test("a pinned host with no certificate at all fails its pins")
    func pinnedWithoutChain() throws {
        let pinned =
            "<key>NSPinnedDomains</key><dict>"
            + ATSSpec.domain(
                "example.com", "<key>NSPinnedLeafIdentities</key>" + ATSSpec.identities([ATSSpec.leafKey])) + "</dict>"
        let result = try verdict(try policy(pinned), observed: connection(chain: []))
        #expect(result.violations.map(\.kind.name) == ["pin_mismatch"])
    }

    @Test("on iOS 9 a blocked local host is not told to use NSAllowsLocalNetworking")
    func ios9LocalAdvice() throws {
        let ios9 = try verdict(try policy("", settings: settings(.ios9)), host: "printer", scheme: .http)
        #expect(
            ios9.violations.first?.allowedBy
                == #"NSExceptionDomains["printer"].NSExceptionAllowsInsecureHTTPLoads = YES"#)
        let ios17 = try verdict(
            try policy("<key>NSAllowsLocalNetworking</key><false/>"), host: "printer", scheme: .http)
        #expect(ios17.violations.first?.allowedBy?.hasPrefix("NSAllowsLocalNetworking = YES, or ") == true)
    }

    @Test("violations come in vocabulary order and the first one's error is the connection's")
    func order() throws {
        let weak = leaf(keyBits: 1024, hash: .sha1, dnsNames: ["other.example.net"])
        let result = try verdict(try policy(""), observed: connection(version: .tls10, suite: 0x002F, leaf: weak))
        #expect(
            result.violations.map(\.kind.name) == [
                "tls_version", "cipher_not_fs", "key_size", "sig_hash_leaf", "name_mismatch",
            ])
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
