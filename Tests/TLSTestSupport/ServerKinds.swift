import Foundation

/// A kind of server ATS refuses, built with real certificates and an `openssl s_server`, with the one
/// violation and the Apple error the proxy must name for it (docs/ats-rules.md, "Violations"; the names
/// are `ViolationKind`'s).
package enum NonCompliantServer: String, CaseIterable, Sendable, CustomStringConvertible {
    case tls10Only, tls11Only, rsaKeyExchangeOnly, dheOnly, tls13CCMOnly, finiteFieldGroupsOnly
    case rsa1024Leaf, sha1Leaf, sha1Intermediate
    case expired, notYetValid, otherHostName, commonNameOnly, selfSignedLeaf, unknownRoot
    case validityOver825Days, clientAuthEKUOnly, smimeOnlyIntermediate

    package var description: String {
        switch self {
        case .tls10Only: "TLS 1.0 only"
        case .tls11Only: "TLS 1.1 only"
        case .rsaKeyExchangeOnly: "TLS 1.2 with RSA key exchange only (AES128-GCM-SHA256)"
        case .dheOnly: "TLS 1.2 with DHE only (DHE-RSA-AES128-GCM-SHA256)"
        case .tls13CCMOnly: "TLS 1.3 with TLS_AES_128_CCM_SHA256 only, a suite no Apple client offers"
        case .finiteFieldGroupsOnly:
            "TLS 1.3 with the ffdhe2048 group only: no key-exchange group in common with Apple's client"
        case .rsa1024Leaf: "an RSA-1024 leaf"
        case .sha1Leaf: "a leaf signed with SHA-1"
        case .sha1Intermediate: "an intermediate signed with SHA-1, sent with -cert_chain"
        case .expired: "an expired leaf"
        case .notYetValid: "a leaf not valid yet"
        case .otherHostName: "a leaf whose SAN names another host"
        case .commonNameOnly: "a leaf with CN=<host> and no SAN"
        case .selfSignedLeaf: "a self-signed leaf"
        case .unknownRoot: "a chain to a root that is not an anchor"
        case .validityOver825Days:
            // Apple compares notAfter − notBefore > 825 days + 1 hour under a user-installed root
            // (SecPolicy.c; docs/ats-rules.md, "Default trust"): openssl -days 826 is a day over.
            "a leaf of openssl -days 826 under a user-installed root: over 825 days and 1 hour"
        case .clientAuthEKUOnly: "a leaf whose extendedKeyUsage is clientAuth only"
        case .smimeOnlyIntermediate:
            "an intermediate whose extendedKeyUsage is emailProtection (S/MIME) only: no TLS server under any anchor"
        }
    }

    /// The violation's name in the log and in X-ATS-Violations.
    package var violation: String {
        switch self {
        case .tls10Only, .tls11Only: "tls_version"
        case .rsaKeyExchangeOnly: "cipher_not_fs"
        case .finiteFieldGroupsOnly: "handshake_failure"
        // docs/ats-rules.md, "Violations": "cipher_not_ats … (DHE-only, 3DES, RC4, NULL)"; ATS's forward
        // secrecy means ECDHE only (Apple: Preventing Insecure Network Connections).
        case .dheOnly, .tls13CCMOnly: "cipher_not_ats"
        case .rsa1024Leaf: "key_size"
        case .sha1Leaf: "sig_hash_leaf"
        case .sha1Intermediate: "sig_hash_chain"
        case .expired: "expired"
        case .notYetValid: "not_yet_valid"
        case .otherHostName, .commonNameOnly: "name_mismatch"
        case .selfSignedLeaf, .unknownRoot: "untrusted_chain"
        case .validityOver825Days: "validity_too_long"
        case .clientAuthEKUOnly, .smimeOnlyIntermediate: "no_serverauth_eku"
        }
    }

    /// Apple's error for it (docs/ats-rules.md, "Violations"): the outer NSURLErrorDomain code and the inner SSL
    /// status.
    package var error: (nsurl: Int, ssl: Int?) {
        switch self {
        case .tls10Only, .tls11Only: (-1200, -9836)  // errSSLPeerProtocolVersion
        // errSSLPeerHandshakeFail
        case .rsaKeyExchangeOnly, .dheOnly, .tls13CCMOnly, .finiteFieldGroupsOnly: (-1200, -9824)
        case .rsa1024Leaf: (-1200, -9883)  // errSSLATSMinimumKeySizeViolation
        case .sha1Leaf: (-1200, -9884)  // errSSLATSLeafCertificateHashAlgorithmViolation
        case .sha1Intermediate: (-1200, -9885)  // errSSLATSCertificateHashAlgorithmViolation
        case .expired: (-1201, -9814)  // ServerCertificateHasBadDate, errSSLCertExpired
        case .notYetValid: (-1204, -9815)  // ServerCertificateNotYetValid, errSSLCertNotYetValid
        case .otherHostName, .commonNameOnly: (-1200, -9807)  // modern OSes (iOS 17 profile)
        case .selfSignedLeaf, .unknownRoot: (-1202, -9813)  // ServerCertificateUntrusted, errSSLNoRootCert
        case .validityOver825Days, .clientAuthEKUOnly, .smimeOnlyIntermediate: (-1202, -9807)
        }
    }

    /// What the log's `tls` object must show of the server, where the kind is about the handshake
    /// or the chain: the version, the suite, the chain's subjects.
    package var facts: (version: String?, cipher: String?, subjects: [String]?) {
        switch self {
        case .tls10Only: ("TLSv1.0", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", nil)
        case .tls11Only: ("TLSv1.1", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", nil)
        case .rsaKeyExchangeOnly: ("TLSv1.2", "TLS_RSA_WITH_AES_128_GCM_SHA256", nil)
        case .dheOnly: ("TLSv1.2", "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", nil)
        case .tls13CCMOnly: ("TLSv1.3", "TLS_AES_128_CCM_SHA256", nil)
        case .sha1Intermediate: ("TLSv1.3", nil, ["CN=leaf", "CN=inter", "CN=root"])
        default: (nil, nil, nil)
        }
    }

    /// Makes the certificates in `factory` (root `root`, server `leaf` for `hostName`) and returns the
    /// s_server options.
    package func serverArguments(_ factory: CertificateFactory, hostName: String = "localhost") throws -> [String] {
        let named = ["subjectAltName=DNS:\(hostName)", "extendedKeyUsage=serverAuth"]
        let day: TimeInterval = 86_400
        let now = Date()
        try factory.rootCA("root")
        var extra: [String] = []
        switch self {
        case .tls10Only, .tls11Only, .rsaKeyExchangeOnly, .dheOnly, .tls13CCMOnly, .finiteFieldGroupsOnly:
            try factory.certificate("leaf", issuer: "root", extensions: named)
            switch self {
            case .tls13CCMOnly: extra = ["-tls1_3", "-ciphersuites", "TLS_AES_128_CCM_SHA256"]
            case .finiteFieldGroupsOnly: extra = ["-tls1_3", "-groups", "ffdhe2048"]
            case .tls10Only: extra = ["-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"]
            case .tls11Only: extra = ["-tls1_1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"]
            case .rsaKeyExchangeOnly: extra = ["-tls1_2", "-cipher", "AES128-GCM-SHA256"]
            default:
                try factory.dhParameters("dh")
                extra = ["-tls1_2", "-cipher", "DHE-RSA-AES128-GCM-SHA256", "-dhparam", "dh.pem"]
            }
        case .rsa1024Leaf:
            try factory.certificate("leaf", issuer: "root", key: "rsa:1024", extensions: named)
        case .sha1Leaf:
            try factory.certificate("leaf", issuer: "root", digest: "sha1", extensions: named)
        case .sha1Intermediate:
            try factory.certificate("inter", issuer: "root", digest: "sha1", extensions: [], isCA: true)
            try factory.certificate("leaf", issuer: "inter", extensions: named)
            extra = ["-cert_chain", "inter.pem"]
        case .expired:
            try factory.certificate(
                "leaf", issuer: "root", notBefore: now - 90 * day, notAfter: now - day, extensions: named)
        case .notYetValid:
            try factory.certificate(
                "leaf", issuer: "root", notBefore: now + 30 * day, notAfter: now + 120 * day, extensions: named)
        case .otherHostName:
            try factory.certificate(
                "leaf", issuer: "root", extensions: ["subjectAltName=DNS:other.example", "extendedKeyUsage=serverAuth"])
        case .commonNameOnly:
            try factory.certificate(
                "leaf", issuer: "root", subject: "/CN=\(hostName)", extensions: ["extendedKeyUsage=serverAuth"])
        case .selfSignedLeaf:
            try factory.selfSignedLeaf("leaf", extensions: named)
        case .unknownRoot:
            try factory.rootCA("other")
            try factory.certificate("leaf", issuer: "other", extensions: named)
        case .validityOver825Days:
            try factory.certificate("leaf", issuer: "root", days: 826, extensions: named)
        case .clientAuthEKUOnly:
            try factory.certificate(
                "leaf", issuer: "root", extensions: ["subjectAltName=DNS:\(hostName)", "extendedKeyUsage=clientAuth"])
        case .smimeOnlyIntermediate:
            try factory.certificate(
                "inter", issuer: "root", extensions: ["extendedKeyUsage=emailProtection"], isCA: true)
            try factory.certificate("leaf", issuer: "inter", extensions: named)
            extra = ["-cert_chain", "inter.pem"]
        }
        // Certificate kinds: any suite, security level 0 so s_server loads weak keys and SHA-1 chains.
        if extra.isEmpty || self == .sha1Intermediate { extra += ["-cipher", "ALL:@SECLEVEL=0"] }
        return ["-cert", "leaf.pem", "-key", "leaf.key"] + extra
    }
}

/// A kind of server ATS accepts.
package enum CompliantServer: String, CaseIterable, Sendable, CustomStringConvertible {
    case tls12ForwardSecret, tls13Only, ecdsaP256Leaf, validity800Days, validity824Days

    package var description: String {
        switch self {
        case .tls12ForwardSecret: "TLS 1.2 with forward secrecy (ECDHE-RSA-AES128-GCM-SHA256)"
        case .tls13Only: "TLS 1.3 only"
        case .ecdsaP256Leaf: "an EC P-256 leaf (ATS takes ECC keys of 256 bits or more)"
        case .validity800Days: "a leaf valid for 800 days under a user-installed root (within the 825-day limit)"
        case .validity824Days:
            "a leaf of openssl -days 824 under a user-installed root: 824 days and 1 second counted inclusively"
        }
    }

    package var tlsVersion: String { self == .tls12ForwardSecret ? "TLSv1.2" : "TLSv1.3" }

    package func serverArguments(_ factory: CertificateFactory, hostName: String = "localhost") throws -> [String] {
        let named = ["subjectAltName=DNS:\(hostName)", "extendedKeyUsage=serverAuth"]
        try factory.rootCA("root")
        var extra: [String] = []
        switch self {
        case .tls12ForwardSecret:
            try factory.certificate("leaf", issuer: "root", extensions: named)
            extra = ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"]
        case .tls13Only:
            try factory.certificate("leaf", issuer: "root", extensions: named)
            extra = ["-tls1_3"]
        case .ecdsaP256Leaf:
            try factory.certificate("leaf", issuer: "root", key: "ec:P-256", extensions: named)
        case .validity800Days:
            try factory.certificate("leaf", issuer: "root", days: 800, extensions: named)
        case .validity824Days:
            try factory.certificate("leaf", issuer: "root", days: 824, extensions: named)
        }
        return ["-cert", "leaf.pem", "-key", "leaf.key"] + extra
    }
}
