import ATSPolicy

/// How a probe's TLS client presents itself: versions and suites.
package struct ClientProfile: Sendable, Hashable {
    package var minimumVersion: TLSVersion
    package var maximumVersion: TLSVersion
    package var tls12Suites: [CipherSuite]
    package var tls13Suites: [CipherSuite]
    /// Security level 0 and every suite OpenSSL can speak: the diagnostic probe that finds out *why*
    /// an ATS-shaped handshake failed (docs/connections.md).
    package var isPermissive: Bool
    /// Suites a permissive profile leaves out: the survey offers all but those a server already chose,
    /// to list every suite it accepts.
    package var excludedSuites: Set<CipherSuite> = []
    /// The ClientHello's size and shape: iOS 26's is four times that of the iOS before it.
    package var hello: HelloShape = .classic

    /// What the ClientHello looks like beyond its versions, suites, groups and signature algorithms.
    package enum HelloShape: Sendable, Hashable {
        /// OpenSSL's own: about 300 bytes, one TCP segment, the size of an iPhone's hello before iOS 26.
        case classic
        /// iOS 26's: it offers the hybrid post-quantum group X25519MLKEM768 first, with its 1,216-byte key
        /// share, which makes the hello about 1.6 KB, two TCP segments at a 1,460-byte MSS. A server or
        /// middlebox that reads the hello from one segment fails iOS 26 devices and passes a small hello;
        /// the probe must fail it too. ``TLSClientContext`` sends the real key share where OpenSSL has
        /// ML-KEM (3.5 and later), and pads the hello to the same size where it has not.
        case postQuantum
    }

    /// The client an ATS app would be for a host: its floor and its suite list (Apple open source:
    /// SecProtocolHelper.m; Apple: NSExceptionMinimumTLSVersion). Where
    /// ATS does not apply, Apple's default client list and TLS 1.0 upwards. Up to TLS 1.3, but iOS 9
    /// had no TLS 1.3 (it came with iOS 12.2), so its client stops at TLS 1.2.
    package static func ats(for requirements: Requirements) -> ClientProfile {
        let minimum = requirements.minimumTLSVersion ?? .tls10
        let ceiling: TLSVersion = requirements.osProfile == .ios9 ? .tls12 : .tls13
        return ClientProfile(
            minimumVersion: minimum, maximumVersion: max(ceiling, minimum),
            tls12Suites: requirements.offeredTLS12Suites, tls13Suites: requirements.offeredTLS13Suites,
            isPermissive: false, hello: requirements.osProfile == .ios26 ? .postQuantum : .classic)
    }

    package static let permissive = ClientProfile(
        minimumVersion: .tls10, maximumVersion: .tls13, tls12Suites: [], tls13Suites: CipherProfile.allTLS13Suites,
        isPermissive: true)

    /// Every suite OpenSSL can speak at exactly `version` except `excluded`: the probes that list what a
    /// server accepts, one version at a time.
    package static func survey(version: TLSVersion, excluding excluded: Set<CipherSuite> = []) -> ClientProfile {
        ClientProfile(
            minimumVersion: version, maximumVersion: version, tls12Suites: [],
            tls13Suites: CipherProfile.allTLS13Suites.filter { !excluded.contains($0) }, isPermissive: true,
            excludedSuites: excluded)
    }

    /// The OpenSSL cipher string for TLS 1.2 and below. Security level 0 always: the probe must
    /// complete handshakes with weak certificates so that the policy, not OpenSSL, judges them.
    var openSSLCipherList: String {
        if isPermissive { return "ALL:COMPLEMENTOFALL:@SECLEVEL=0" }
        return (tls12Suites.compactMap(\.openSSLName) + ["@SECLEVEL=0"]).joined(separator: ":")
    }

    /// The key-exchange groups offered. Apple's clients offer X25519 and the NIST curves P-256, P-384 and
    /// P-521 (their ClientHello's supported_groups; Apple's documents are silent), never finite-field DH groups,
    /// which OpenSSL would also offer: a server that only takes those fails on an iPhone. The permissive
    /// probe keeps OpenSSL's whole list, to complete the handshake and say why.
    var openSSLGroups: String? { isPermissive ? nil : "X25519:P-256:P-384:P-521" }

    /// iOS 26's groups, tried in turn: X25519MLKEM768 first and X25519 with a key share each (the `*`
    /// syntax of OpenSSL 3.5), then X25519MLKEM768 alone with one. OpenSSL without ML-KEM refuses both
    /// (an unknown group name fails the whole list), which is how the context finds out at run time.
    static let postQuantumGroupLists = [
        "*X25519MLKEM768:*X25519:P-256:P-384:P-521", "X25519MLKEM768:X25519:P-256:P-384:P-521",
    ]

    /// The signature algorithms offered, in the order an iPhone's ClientHello lists them (a captured
    /// iOS 14.2 ClientHello; OpenSSL 3.0 sends them in this order), so a
    /// server that picks by the client's preference signs as it would for an iPhone. `ECDSA+SHA1`
    /// because OpenSSL 3.0's parser refuses the name `ecdsa_sha1`; the SHA-1 ones are sent only at
    /// security level 0, which these contexts use. The permissive probe keeps OpenSSL's own list.
    var openSSLSignatureAlgorithms: String? {
        isPermissive
            ? nil
            : "ecdsa_secp256r1_sha256:rsa_pss_rsae_sha256:rsa_pkcs1_sha256:ecdsa_secp384r1_sha384:ECDSA+SHA1:"
                + "rsa_pss_rsae_sha384:rsa_pkcs1_sha384:rsa_pss_rsae_sha512:rsa_pkcs1_sha512:rsa_pkcs1_sha1"
    }

    var openSSLTLS13Suites: String { tls13Suites.compactMap(\.openSSLName).joined(separator: ":") }
}
