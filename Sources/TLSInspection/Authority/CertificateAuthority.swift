import ATSPolicy
internal import COpenSSL
import Glibc

/// The proxy's own root: the certificate a device is told to trust and the key that signs the
/// leaves intercept mode presents. Kept in one directory as `ca.pem` (the certificate, 0644) and
/// `ca.key` (its PKCS #8 private key, 0600).
///
/// Immutable once created or loaded, so one value serves every event loop.
package struct CertificateAuthority: Sendable {
    package let certificate: X509Certificate
    package let key: PrivateKey
    /// The directory it was created in or loaded from.
    package let directory: String

    package static let certificateFileName = "ca.pem"
    package static let keyFileName = "ca.key"
    /// Where the daemon keeps its CA under systemd (StateDirectory=atsproxy).
    package static let defaultDirectory = "/var/lib/atsproxy/ca"
    /// How long a new CA is valid: devices trust it by hand, so it should rarely need replacing.
    package static let lifetimeDays: Int64 = 3650

    /// Seconds since 1970 by the system clock: the default `now`.
    package static var currentTime: Int64 { Int64(time(nil)) }

    package var certificatePath: String { Self.path(directory, Self.certificateFileName) }
    package var keyPath: String { Self.path(directory, Self.keyFileName) }

    /// "atsproxy CA (HOSTNAME)": a CN is what iOS's Certificate Trust Settings lists a root by (it
    /// lists none without one), and the host name tells one proxy's CA from another's.
    package static var defaultCommonName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        let host =
            gethostname(&buffer, buffer.count) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "localhost"
        // ub-common-name is 64 characters; "atsproxy CA ()" takes 14 of them.
        return "atsproxy CA (\(host.prefix(50)))"
    }

    /// Makes a new CA and writes it to `directory` (created 0700 if missing).
    ///
    /// The certificate: X.509 v3, SHA-256, random serial, subject CN = `commonName`, O = atsproxy,
    /// BasicConstraints critical CA:TRUE with pathlen 0 (it signs leaves only), KeyUsage critical
    /// keyCertSign and cRLSign, subjectKeyIdentifier (the leaves' authorityKeyIdentifier), valid
    /// from one day ago (devices whose clocks run behind) for ``lifetimeDays`` days.
    ///
    /// - Parameters:
    ///   - force: replace a CA already in `directory`; without it an existing `ca.pem` or `ca.key`
    ///     is an error naming the file.
    ///   - now: seconds since 1970.
    package static func create(
        in directory: String, keyType: PrivateKey.Kind = .ecdsaP256, commonName: String = defaultCommonName,
        force: Bool = false, now: Int64 = CertificateAuthority.currentTime
    ) throws(CertificateAuthorityError) -> CertificateAuthority {
        let certificatePath = path(directory, certificateFileName)
        let keyPath = path(directory, keyFileName)
        for file in [certificatePath, keyPath] where AuthorityFiles.exists(file) {
            guard force else { throw CertificateAuthorityError(path: file, problem: .exists) }
        }
        let key: PrivateKey
        let certificate: X509Certificate
        let keyPEM: [UInt8]
        let certificatePEM: [UInt8]
        do {
            key = try PrivateKey.generate(keyType)
            let draft = try CertificateDraft()
            try draft.setRandomSerial()
            try draft.setSubject(commonName: commonName, organization: "atsproxy")
            try draft.setIssuerToSubject()
            let notBefore = now - 86_400
            try draft.setValidity(notBefore: notBefore, notAfter: notBefore + lifetimeDays * 86_400)
            try draft.setPublicKey(key)
            try draft.addExtension(NID_basic_constraints, "critical,CA:TRUE,pathlen:0")
            try draft.addExtension(NID_key_usage, "critical,keyCertSign,cRLSign")
            try draft.addExtension(NID_subject_key_identifier, "hash")
            certificate = try draft.sign(with: key)
            keyPEM = try key.pkcs8PEM
            certificatePEM = try certificate.pem
        } catch {
            throw CertificateAuthorityError(path: directory, problem: .openSSL(error))
        }
        try AuthorityFiles.makeDirectory(directory, mode: 0o700)
        if force {
            unlink(keyPath)
            unlink(certificatePath)
        }
        // The key first: a certificate without its key would load as "missing ca.key" anyway, but
        // a key must never be written with a looser mode, so it is made 0600 by the open itself.
        try AuthorityFiles.create(keyPath, mode: 0o600, bytes: keyPEM)
        do {
            try AuthorityFiles.create(certificatePath, mode: 0o644, bytes: certificatePEM)
        } catch {
            unlink(keyPath)
            throw error
        }
        return CertificateAuthority(certificate: certificate, key: key, directory: directory)
    }

    /// Reads the CA in `directory` and checks it can sign leaves a device will accept.
    ///
    /// - Throws: naming the file: a missing or unreadable file; text that is not a PEM certificate
    ///   or key; a key that is not the certificate's; a certificate without CA:TRUE or keyCertSign;
    ///   an expired certificate; a `ca.key` readable by group or others.
    package static func load(from directory: String, now: Int64 = CertificateAuthority.currentTime)
        throws(CertificateAuthorityError)
        -> CertificateAuthority
    {
        let certificatePath = path(directory, certificateFileName)
        let keyPath = path(directory, keyFileName)
        let keyFile = try AuthorityFiles.read(keyPath)
        guard keyFile.mode & 0o077 == 0 else {
            throw CertificateAuthorityError(path: keyPath, problem: .keyReadableByOthers(mode: keyFile.mode))
        }
        let certificateFile = try AuthorityFiles.read(certificatePath)
        let certificate: X509Certificate
        do {
            certificate = try X509Certificate.certificates(pem: certificateFile.bytes)[0]
        } catch {
            throw CertificateAuthorityError(
                path: certificatePath, problem: .notPEM(error.openSSLErrors.joined(separator: "; ")))
        }
        let key: PrivateKey
        do {
            key = try PrivateKey(pem: keyFile.bytes)
        } catch {
            throw CertificateAuthorityError(
                path: keyPath, problem: .notPEM(error.openSSLErrors.joined(separator: "; ")))
        }
        guard X509_check_private_key(certificate.raw, key.raw) == 1 else {
            ERR_clear_error()
            throw CertificateAuthorityError(path: keyPath, problem: .keyMismatch(certificate: certificatePath))
        }
        if let lack = certificate.cannotIssueBecause {
            throw CertificateAuthorityError(path: certificatePath, problem: .notCA(lack))
        }
        guard certificate.notAfter > now else {
            throw CertificateAuthorityError(path: certificatePath, problem: .expired(notAfter: certificate.notAfter))
        }
        return CertificateAuthority(certificate: certificate, key: key, directory: directory)
    }

    static func path(_ directory: String, _ file: String) -> String {
        directory.hasSuffix("/") ? directory + file : directory + "/" + file
    }
}

extension X509Certificate {
    /// What keeps this certificate from issuing others, or nil when it can.
    var cannotIssueBecause: String? {
        let flags = X509_get_extension_flags(raw)
        guard flags & UInt32(EXFLAG_CA) != 0 else { return "basicConstraints lacks CA:TRUE" }
        guard flags & UInt32(EXFLAG_KUSAGE) != 0, X509_get_key_usage(raw) & UInt32(KU_KEY_CERT_SIGN) != 0 else {
            return "keyUsage lacks keyCertSign"
        }
        return nil
    }
}

extension CertificateAuthority {
    /// The certificate as PEM, what `ca.pem` holds.
    package var pem: [UInt8] {
        get throws(TLSError) { try certificate.pem }
    }
    /// The certificate as DER: a `.cer` file for a device.
    package var der: [UInt8] { certificate.der }
    package var sha256Fingerprint: String { certificate.fingerprint(.sha256) }
    package var sha1Fingerprint: String { certificate.fingerprint(.sha1) }
    /// The subject in RFC 2253 form: "CN=atsproxy CA (host),O=atsproxy".
    package var subject: String { certificate.subject }
    /// Seconds since 1970.
    package var notBefore: Int64 { certificate.notBefore }
    package var notAfter: Int64 { certificate.notAfter }

    /// An iOS configuration profile installing this CA as a root; identical bytes on every export.
    package func mobileConfig() -> [UInt8] { MobileConfig(certificate: certificate).bytes }

    /// A profile that installs the CA and `payloads` at once (a WireGuard device's VPN payload), as
    /// one profile of its own (`identifier`): the same inputs give the same bytes.
    package func mobileConfig(
        identifier: String, displayName: String, description: String, adding payloads: [[(String, PropertyListValue)]]
    ) -> [UInt8] {
        MobileConfig(
            certificate: certificate,
            bundle: MobileConfig.Bundle(
                identifier: identifier, displayName: displayName, description: description, payloads: payloads)
        ).bytes
    }

    /// A UUID string derived from `text` and this CA (RFC 9562 version 8): a payload's, stable
    /// across exports.
    package func payloadUUID(for text: String) -> String {
        MobileConfig.uuid(Array(MobileConfig.sha256(certificate.der + Array(text.utf8)).prefix(16)))
    }
}
