import TextFormats

/// Default server trust as Apple's trust code applies it (Apple open source, Security-61901:
/// SecPolicy.c, SecPolicyServer.c, SecPolicyLeafCallbacks.c, CertificateTransparency.m; docs/ats-rules.md,
/// "Default trust"), plus ATS's own SHA-256 floor. Every rule depends on the kind of anchor the path
/// ends at (``TrustAnchorKind``) and on where that anchor sits: a leaf the user or the app trusts
/// directly skips the key-size, hash and validity-cap checks.
extension VerdictChecker {
    mutating func checkCertificates(_ observed: ObservedConnection) {
        guard let leaf = observed.chain.first else {
            // No certificate to judge: nothing can satisfy a pin either.
            checkPins([])
            return
        }
        let waived = settings.assumeAppOverridesTrust && requirements.appMayOverrideTrust
        if !waived {
            let path = TrustPath(observed)
            checkKeySizes(path)
            checkSignatureHashes(path)
            checkTrust(observed)
            checkName(leaf)
            checkDates(observed)
            checkValidityCap(path)
            checkExtendedKeyUsage(path)
            checkCertificateTransparency(observed, path)
        }
        checkPins(observed.chain)
    }

    /// Key and hash failures surface as ATS statuses where ATS applies, as plain trust failures elsewhere.
    private func certificateError(atsStatus: Int) -> AppleError {
        requirements.atsMinimumsApply ? AppleError(nsurl: -1200, ssl: atsStatus) : AppleError(nsurl: -1202, ssl: -9807)
    }

    /// RSA ≥ 2048, EC ≥ 256 for every certificate of the path, the anchor included, but a leaf the user
    /// or the app trusts directly (SecPolicyCheckKeySize skips a leaf that is its own anchor).
    private mutating func checkKeySizes(_ path: TrustPath) {
        for (index, certificate) in path.chain.enumerated() where !path.isDirectlyTrustedLeaf(index) {
            let weak: Bool
            switch certificate.keyType {
            case .rsa: weak = certificate.keyBits < 2048
            case .ec: weak = certificate.keyBits < 256
            case .dsa: weak = true
            case .ed25519, .ed448, .other: weak = false
            }
            guard weak else { continue }
            add(
                .keySize, certificateError(atsStatus: -9883),
                "the \(path.position(index)) certificate \"\(certificate.subject)\" has a "
                    + "\(certificate.keyType.rawValue.uppercased())-\(certificate.keyBits) key; ATS and system trust require "
                    + "RSA 2048 or ECC 256 bits or more")
            return
        }
    }

    /// No MD2, MD4, MD5 or SHA-1 (and, where ATS applies, no SHA-224) on any certificate but a
    /// self-signed one (nobody relies on its own signature: a self-signed leaf included) and an anchor the
    /// user or the app installed (SecPolicyCheckWeakSignature skips both).
    private mutating func checkSignatureHashes(_ path: TrustPath) {
        let ats = requirements.atsMinimumsApply
        func weak(_ index: Int) -> Bool {
            let certificate = path.chain[index]
            guard !certificate.isSelfSigned, !path.isInstalledAnchor(index) else { return false }
            return certificate.signatureHash.isBrokenForTrust || (ats && certificate.signatureHash.isBelowATSFloor)
        }
        if !path.chain.isEmpty, weak(0) {
            let leaf = path.chain[0]
            add(
                .signatureHashLeaf, certificateError(atsStatus: -9884),
                "the leaf certificate is signed with \(leaf.signatureAlgorithm); ATS requires SHA-256 or stronger")
        }
        if let index = path.chain.indices.dropFirst().first(where: weak) {
            add(
                .signatureHashChain, certificateError(atsStatus: -9885),
                "the intermediate certificate \"\(path.chain[index].subject)\" is signed with "
                    + "\(path.chain[index].signatureAlgorithm); ATS requires SHA-256 or stronger")
        }
    }

    private mutating func checkTrust(_ observed: ObservedConnection) {
        guard case .untrusted(let reason) = observed.trust else { return }
        // An app that accepts the certificate in its delegate still fails where ATS demands system
        // trust: "ATS failed system trust", -1200 with -9802 (Apple: Preventing Insecure Network
        // Connections; docs/ats-rules.md, "Violations").
        let overriddenUnderATS = settings.assumeAppOverridesTrust && requirements.atsMinimumsApply
        add(
            .untrustedChain,
            overriddenUnderATS ? AppleError(nsurl: -1200, ssl: -9802) : AppleError(nsurl: -1202, ssl: -9813),
            "the chain does not lead to a trusted root (\(reason))"
                + (overriddenUnderATS ? "; ATS requires system trust, which the app's own code cannot grant" : ""))
    }

    private mutating func checkName(_ leaf: CertificateFacts) {
        guard !CertificateNameMatcher.matches(requirements.host, leaf) else { return }
        let names = leaf.dnsNames + leaf.ipAddresses.map(\.description)
        let error =
            settings.osProfile == .ios9 ? AppleError(nsurl: -1202, ssl: -9843) : AppleError(nsurl: -1200, ssl: -9807)
        var detail =
            names.isEmpty
            ? "the certificate has no subjectAltName, and Apple ignores the common name"
            : "the certificate names " + names.prefix(5).joined(separator: ", ") + (names.count > 5 ? ", …" : "")
        if let near = CertificateNameMatcher.nearMiss(requirements.host, leaf) { detail += "; \(near)" }
        add(.nameMismatch, error, "\(requirements.host) is not a name of the server's certificate: \(detail)")
    }

    private mutating func checkDates(_ observed: ObservedConnection) {
        let path = TrustPath(observed)
        let now = observed.evaluationTime
        if let index = observed.chain.indices.first(where: { observed.chain[$0].notAfter < now }) {
            let certificate = observed.chain[index]
            add(
                .expired, AppleError(nsurl: -1201, ssl: -9814),
                "the \(path.position(index)) certificate \"\(certificate.subject)\" expired on "
                    + DateFormat.rfc3339(certificate.notAfter))
        }
        if let index = observed.chain.indices.first(where: { observed.chain[$0].notBefore > now }) {
            let certificate = observed.chain[index]
            add(
                .notYetValid, AppleError(nsurl: -1204, ssl: -9815),
                "the \(path.position(index)) certificate \"\(certificate.subject)\" is not valid before "
                    + DateFormat.rfc3339(certificate.notBefore))
        }
    }

    /// The leaf's validity cap (SecPolicy.c, `set_ssl_validity_periods`; Apple: HT211025, HT210176):
    /// under a system root, leaves issued from 2020-09-01 at most 398 days exactly, from 2018-03-01 at
    /// most 825 days and one hour; under a user or app anchor, leaves issued after 2019-06-30T23:00:00Z at
    /// most 825 days and one hour. Apple compares `notAfter − notBefore > max`, so a leaf of exactly the
    /// cap passes. No cap for a leaf that is itself the anchor.
    private mutating func checkValidityCap(_ path: TrustPath) {
        guard let anchor = path.anchor, let leaf = path.chain.first, !path.leafIsAnchor else { return }
        let cap: Int64
        let since: String
        if anchor.isSystem, leaf.notBefore >= AppleDates.shortValidityFrom {
            (cap, since) = (398 * 86_400, "2020-09-01")
        } else if anchor.isSystem, leaf.notBefore >= AppleDates.systemValidityLimitFrom {
            (cap, since) = (825 * 86_400 + 3600, "2018-03-01")
        } else if !anchor.isSystem, leaf.notBefore > AppleDates.userValidityLimitAfter {
            (cap, since) = (825 * 86_400 + 3600, "2019-07-01")
        } else {
            return
        }
        let period = leaf.validityPeriod
        guard period > cap else { return }
        add(
            .validityTooLong, AppleError(nsurl: -1202, ssl: -9807),
            "the leaf certificate is valid for \(Self.duration(period)); leaves under \(anchor.words) issued from "
                + "\(since) may be valid for at most \(Self.duration(cap))")
    }

    /// `398 days`, `825 days and 1 hour`, `825 days, 1 hour and 1 second`: exact, as the cap is.
    static func duration(_ seconds: Int64) -> String {
        let days = seconds / 86_400
        let hours = seconds % 86_400 / 3600
        let rest = seconds % 3600
        var parts = ["\(days) day\(days == 1 ? "" : "s")"]
        if hours > 0 { parts.append("\(hours) hour\(hours == 1 ? "" : "s")") }
        if rest > 0 { parts.append("\(rest) second\(rest == 1 ? "" : "s")") }
        guard parts.count > 1 else { return parts[0] }
        return parts.dropLast().joined(separator: ", ") + " and " + parts[parts.count - 1]
    }

    /// The extendedKeyUsage rules (SecPolicyLeafCallbacks.c, SecPolicyServer.c). The loose check holds
    /// for every anchor and date: a certificate of the path (but the anchor) that has the extension
    /// must list serverAuth, anyExtendedKeyUsage or Server Gated Crypto. The strict one depends on the
    /// anchor: under a system root the leaf must list serverAuth itself, whatever its date, and every
    /// sub-CA with the extension serverAuth or anyExtendedKeyUsage; under an app anchor a leaf issued
    /// after 2019-06-30T23:00:00Z must list serverAuth; under a user anchor there is no strict check.
    private mutating func checkExtendedKeyUsage(_ path: TrustPath) {
        var reasons: [String] = []
        // The leaf is checked even when it is its own anchor; an anchor above it is not.
        for index in path.chain.indices where index == 0 || !path.isAnchor(index) {
            guard let usages = path.chain[index].extendedKeyUsage else { continue }
            if !usages.contains(where: \.allowsTLSServer) {
                reasons.append(
                    "the \(path.position(index)) certificate \"\(path.chain[index].subject)\" is limited to "
                        + Self.words(usages) + ", which no TLS server may use")
            }
        }
        if reasons.isEmpty, let leaf = path.chain.first, let anchor = path.anchor {
            let usages = leaf.extendedKeyUsage
            let has = usages.map { "lists only " + Self.words($0) } ?? "has no extendedKeyUsage extension"
            switch anchor {
            case .system, .appleSystem:
                if !(usages ?? []).contains(.serverAuth) {
                    reasons.append(
                        "the leaf certificate \(has); under a system root the leaf must list serverAuth itself "
                            + "(anyExtendedKeyUsage is not enough), whatever its issue date")
                }
                for index in path.chain.indices.dropFirst() where !path.isAnchor(index) {
                    guard let usages = path.chain[index].extendedKeyUsage,
                        !usages.contains(.serverAuth), !usages.contains(.any)
                    else { continue }
                    reasons.append(
                        "the intermediate certificate \"\(path.chain[index].subject)\" lists only \(Self.words(usages)); "
                            + "under a system root a sub-CA must allow serverAuth or anyExtendedKeyUsage")
                }
            case .app:
                if leaf.notBefore > AppleDates.userValidityLimitAfter, !(usages ?? []).contains(.serverAuth) {
                    reasons.append(
                        "the leaf certificate \(has); under an anchor the app sets, leaves issued after 2019-07-01 "
                            + "must list serverAuth (anyExtendedKeyUsage is not enough)")
                }
            case .user:
                break
            }
        }
        guard !reasons.isEmpty else { return }
        add(.noServerAuthEKU, AppleError(nsurl: -1202, ssl: -9807), reasons.joined(separator: "; "))
    }

    private static func words(_ usages: [CertificateFacts.ExtendedKeyUsage]) -> String {
        guard !usages.isEmpty else { return "no purpose" }
        return usages.map { usage in
            switch usage {
            case .serverAuth: "serverAuth"
            case .clientAuth: "clientAuth"
            case .any: "anyExtendedKeyUsage"
            case .serverGatedCrypto: "Server Gated Crypto"
            case .emailProtection: "emailProtection (S/MIME)"
            case .other(let oid): oid
            }
        }.joined(separator: " and ")
    }

    /// Apple's CT rule (SecPolicyCheckSystemTrustedCTRequired; Apple: Certificate Transparency policy,
    /// HT205280): only for chains to a system root that is not one of Apple's own, leaves issued from
    /// 2018-10-16 that have not expired. Two SCTs with one delivered in the handshake suffice; otherwise
    /// embedded SCTs as many as the leaf's lifetime asks, by the table of its issue date.
    private mutating func checkCertificateTransparency(_ observed: ObservedConnection, _ path: TrustPath) {
        guard settings.certificateTransparency == .apple, path.anchor == .system,
            let leaf = observed.chain.first, leaf.notBefore >= AppleDates.ctRequiredFrom,
            leaf.notAfter >= observed.evaluationTime
        else { return }
        let requirement = CTRequirement(leaf: leaf)
        if let verification = observed.sctVerification {
            return checkVerifiedSCTs(verification, requirement)
        }
        let total = observed.embeddedSCTs + observed.deliveredSCTs
        if observed.deliveredSCTs >= 1, total >= 2 { return }
        if observed.embeddedSCTs >= requirement.embedded { return }
        add(
            .certificateTransparency, AppleError(nsurl: -1202, ssl: -9807),
            "the certificate carries \(observed.embeddedSCTs) embedded and \(observed.deliveredSCTs) delivered SCTs "
                + "(counted: no CT log list was given to verify them); Apple's CT policy needs "
                + "\(requirement.embedded) embedded for \(requirement.reason), or 2 with one delivered in the handshake"
        )
    }

    /// Apple's CT policy with the SCTs verified against a log list (HT205280): at least 2 SCTs with valid
    /// signatures from once- or currently-approved logs of at least 2 operators, and either 2 from currently
    /// approved logs with one delivered in the handshake, or the embedded count the lifetime asks with one
    /// from a currently approved log.
    private mutating func checkVerifiedSCTs(_ verification: SCTVerification, _ requirement: CTRequirement) {
        let counted = verification.scts.filter(\.counts)
        let operators = Set(counted.map { $0.logOperator ?? $0.log })
        let current = counted.filter { $0.approval == .current }
        let delivered = current.contains { $0.source != .embedded } && current.count >= 2
        let embedded = counted.filter { $0.source == .embedded }
        let enoughEmbedded =
            embedded.count >= requirement.embedded && embedded.contains { $0.approval == .current }
        if counted.count >= 2, operators.count >= 2, delivered || enoughEmbedded { return }
        let rejected = verification.scts.filter { !$0.counts }.map { sct in
            "\(sct.log): " + (!sct.signatureValid ? "bad signature" : "log not approved")
        }
        add(
            .certificateTransparency, AppleError(nsurl: -1202, ssl: -9807),
            "verified against \(verification.logList): \(counted.count) of \(verification.scts.count) SCTs count "
                + "(\(embedded.count) embedded), from \(operators.count) operator\(operators.count == 1 ? "" : "s")"
                + (rejected.isEmpty ? "" : "; not counted: " + rejected.joined(separator: ", "))
                + "; Apple's CT policy needs SCTs from 2 operators: \(requirement.embedded) embedded for "
                + "\(requirement.reason), or 2 from current logs with one delivered in the handshake")
    }
}

/// How many embedded SCTs Apple's CT policy asks of a leaf, and why: leaves issued before 2021-04-21 by
/// the older table in whole months (< 15: 2, ≤ 27: 3, ≤ 39: 4, else 5), later ones by the current
/// bands on `notAfter − notBefore` (≤ 180 days: 2, ≤ 825 days: 3, else 4).
struct CTRequirement {
    let embedded: Int
    let reason: String

    init(leaf: CertificateFacts) {
        if leaf.notBefore < AppleDates.currentCTTableFrom {
            let months = DateFormat.fullMonths(from: leaf.notBefore, to: leaf.notAfter)
            embedded =
                switch months {
                case ..<15: 2
                case ...27: 3
                case ...39: 4
                default: 5
                }
            reason = "a leaf issued before 2021-04-21 valid for \(months) whole months"
        } else {
            let period = leaf.validityPeriod
            embedded = period <= 180 * 86_400 ? 2 : period <= 825 * 86_400 ? 3 : 4
            reason = "a leaf valid for \(VerdictChecker.duration(period))"
        }
    }
}

/// The path a verdict judges, with where its anchor sits: the last certificate when the chain is
/// anchored, which is the leaf itself for a directly trusted leaf.
struct TrustPath {
    let chain: [CertificateFacts]
    let anchor: TrustAnchorKind?

    init(_ observed: ObservedConnection) {
        chain = observed.chain
        anchor = observed.trust.anchorKind
    }

    var leafIsAnchor: Bool { anchor != nil && chain.count == 1 }

    func isAnchor(_ index: Int) -> Bool { anchor != nil && index == chain.count - 1 }

    /// An anchor the user or the app installed (not one of the system store's roots).
    func isInstalledAnchor(_ index: Int) -> Bool {
        guard isAnchor(index), let anchor else { return false }
        return !anchor.isSystem
    }

    /// The leaf, trusted directly by the user or the app.
    func isDirectlyTrustedLeaf(_ index: Int) -> Bool { index == 0 && leafIsAnchor && isInstalledAnchor(0) }

    func position(_ index: Int) -> String {
        if index == 0 { return "leaf" }
        if isAnchor(index) { return chain[index].isSelfSigned ? "root" : "anchor" }
        return chain[index].isSelfSigned ? "root" : "intermediate"
    }
}

extension TrustAnchorKind {
    /// "a system root", "a user-installed root", "an anchor the app sets".
    var words: String {
        switch self {
        case .system: "a system root"
        case .appleSystem: "one of Apple's system roots"
        case .user: "a user-installed root"
        case .app: "an anchor the app sets"
        }
    }
}

extension CertificateFacts {
    /// `notAfter − notBefore`: the difference Apple's validity cap and CT bands compare (SecPolicy.c).
    var validityPeriod: Int64 { notAfter - notBefore }
}

/// The dates Apple's trust rules switch on, in seconds since 1970 (Apple: HT210176, HT211025, the
/// Certificate Transparency policy HT205280; Apple open source: SecPolicy.c, SecPolicyServer.c).
enum AppleDates {
    static let systemValidityLimitFrom: Int64 = 1_519_862_400  // 2018-03-01
    static let ctRequiredFrom: Int64 = 1_539_648_000  // 2018-10-16
    /// Apple's "1 July 2019", as the code writes it: leaves issued after 2019-06-30T23:00:00Z.
    static let userValidityLimitAfter: Int64 = 1_561_935_600
    static let shortValidityFrom: Int64 = 1_598_918_400  // 2020-09-01
    static let currentCTTableFrom: Int64 = 1_618_963_200  // 2021-04-21
}
