import ATSPolicy
import Testing
import TextFormats

/// The exception entries `diagnose` and `report` propose, and the XML they are pasted as.
@Suite("Suggested exceptions and the property-list writer")
struct SuggestedExceptionTests {
    static let fs = SuggestedException(disablesForwardSecrecy: true)
    static let tls11 = SuggestedException(minimumTLSVersion: .tls11)
    static let tls10 = SuggestedException(minimumTLSVersion: .tls10)
    static let http = SuggestedException(allowsInsecureHTTPLoads: true)

    @Test(
        "looseness orders entries so that relaxing a subset always weighs less",
        arguments: [
            (SuggestedException(), fs), (fs, tls11), (tls11, tls10), (tls10, http),
            (tls11, tls11.union(fs)), (tls10.union(fs), http), (http, http.union(fs)),
        ])
    func looseness(lighter: SuggestedException, heavier: SuggestedException) {
        #expect(lighter.looseness < heavier.looseness)
    }

    @Test("a floor at or above TLS 1.2 relaxes nothing and is not written")
    func defaultFloorIsDropped() {
        #expect(SuggestedException(minimumTLSVersion: .tls12).relaxesNothing)
        #expect(SuggestedException(minimumTLSVersion: .tls13).entries.isEmpty)
        #expect(!Self.tls11.relaxesNothing)
    }

    @Test("covers: a lower floor covers a higher one, flags cover only themselves")
    func covers() {
        #expect(Self.tls10.covers(Self.tls11))
        #expect(!Self.tls11.covers(Self.tls10))
        #expect(!Self.tls10.covers(Self.fs))
        #expect(Self.http.union(Self.fs).covers(Self.fs))
        #expect(SuggestedException().covers(SuggestedException()))
    }

    @Test("keysBeyond names what a policy's entry lacks")
    func keysBeyond() {
        let needed = Self.tls10.union(Self.fs)
        #expect(needed.keysBeyond(Self.tls11) == ["NSExceptionMinimumTLSVersion", "NSExceptionRequiresForwardSecrecy"])
        #expect(needed.keysBeyond(needed).isEmpty)
    }

    @Test("the Info.plist fragment is tab-indented XML that parses back to the same policy")
    func fragmentRoundTrips() throws {
        let fragment = SuggestedException.infoPlistFragment([
            (domain: "legacy.example.com", exception: Self.tls10.union(Self.fs)),
            (
                domain: "cdn.example.com",
                exception: SuggestedException(allowsInsecureHTTPLoads: true, includesSubdomains: true)
            ),
        ])
        #expect(fragment.hasPrefix("<key>NSAppTransportSecurity</key>\n<dict>\n\t<key>NSExceptionDomains</key>\n"))
        #expect(fragment.contains("\t\t\t<key>NSExceptionMinimumTLSVersion</key>\n\t\t\t<string>TLSv1.0</string>\n"))
        let document = "<plist version=\"1.0\"><dict>\(fragment)</dict></plist>"
        let policy = try TransportSecurityPolicy(root: PropertyListParser.parse(Array(document.utf8)).root)
        #expect(policy.findings.filter { $0.severity != .info }.isEmpty)
        let legacy = try policy.requirements(forHost: "legacy.example.com")
        #expect(legacy.minimumTLSVersion == .tls10)
        #expect(!legacy.requiresForwardSecrecy)
        let cdn = try policy.requirements(forHost: "img.cdn.example.com", scheme: .http)
        #expect(cdn.cleartextAllowed)
    }

    @Test("XML special characters are escaped, empty containers are self-closing")
    func escaping() {
        let document = PropertyListWriter.document(
            .dictionary(ordered: [
                ("a<b>&c", .string("x & y")), ("empty", .dictionary([])), ("list", .array([])),
            ]))
        #expect(document.contains("<key>a&lt;b&gt;&amp;c</key>"))
        #expect(document.contains("<string>x &amp; y</string>"))
        #expect(document.contains("\t<dict/>\n\t<key>list</key>\n\t<array/>\n"))
        #expect(document.hasSuffix("</dict>\n</plist>\n"))
    }

    @Test("JSON keeps the plist's keys, order and values")
    func json() {
        let entry = SuggestedException(minimumTLSVersion: .tls11, disablesForwardSecrecy: true)
        #expect(
            entry.json.serialized
                == #"{"NSExceptionMinimumTLSVersion":"TLSv1.1","NSExceptionRequiresForwardSecrecy":false}"#)
        #expect(entry.summary == "NSExceptionMinimumTLSVersion = TLSv1.1, NSExceptionRequiresForwardSecrecy = NO")
    }
}
