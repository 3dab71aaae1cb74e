import ATSPolicy
import TLSInspection

/// Where a suite the server accepts stands with Apple's clients: which ATS dictionary offers it.
enum SuiteStanding: String {
    case ats = "ats"
    case forwardSecrecyOff = "ats_forward_secrecy_off"
    case forwardSecrecyOffWithInsecureHTTP = "forward_secrecy_off_and_insecure_http"
    case notOffered = "not_offered"

    init(_ suite: CipherSuite, profile: CipherProfile) {
        if suite.keyExchange == .tls13 {
            self = CipherProfile.tls13Suites.contains(suite) ? .ats : .notOffered
        } else if profile.forwardSecretSuites.contains(suite) {
            self = .ats
        } else if profile.compatibilitySuites.contains(suite) {
            self = .forwardSecrecyOff
        } else if profile.offeredSuites(restriction: .unrestricted).contains(suite) {
            self = .forwardSecrecyOffWithInsecureHTTP
        } else {
            self = .notOffered
        }
    }

    var words: String {
        switch self {
        case .ats: "ATS"
        case .forwardSecrecyOff: "ATS with NSExceptionRequiresForwardSecrecy = NO"
        case .forwardSecrecyOffWithInsecureHTTP: "only with forward secrecy off and insecure HTTP allowed, or ATS off"
        case .notOffered: "no Apple client offers it"
        }
    }
}

extension ServerSurvey {
    /// The server's chain as an `NSPinnedDomains` entry for `host`: the leaf's key in
    /// `NSPinnedLeafIdentities`, every CA's in `NSPinnedCAIdentities`.
    func pinnedDomains(host: String) -> PropertyListValue? {
        let hashes = chain.map(\.facts.spkiSHA256)
        guard let leaf = hashes.first ?? nil else { return nil }
        func identities(_ list: [SPKIHash]) -> PropertyListValue {
            .array(list.map { PropertyListNode(.dictionary(ordered: [(ATSKey.spkiSHA256, .string($0.base64))])) })
        }
        var entry: [(String, PropertyListValue)] = [(ATSKey.pinnedLeafIdentities, identities([leaf]))]
        let authorities = hashes.dropFirst().compactMap(\.self)
        if !authorities.isEmpty { entry.append((ATSKey.pinnedCAIdentities, identities(authorities))) }
        return .dictionary(ordered: [(host, .dictionary(ordered: entry))])
    }
}

extension ChainTrust {
    var words: String {
        switch self {
        case .anchored(.system): "chains to a system root"
        case .anchored(.appleSystem): "chains to one of Apple's own system roots"
        case .anchored(.user): "chains to a user-installed root (--ca-file)"
        case .anchored(.app): "chains to an anchor the app sets itself (--app-anchor)"
        case .untrusted(let reason): "not trusted: \(reason)"
        }
    }
}
