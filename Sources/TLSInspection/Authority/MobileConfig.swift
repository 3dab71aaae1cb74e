import ATSPolicy
internal import COpenSSL

/// An iOS configuration profile that installs a CA certificate as a root: an XML property list with
/// one `com.apple.security.root` payload (Apple's Device Management documentation,
/// "Certificate Root" payload).
///
/// The same certificate always gives the same bytes: the UUIDs come from its SHA-256, so a profile
/// exported twice is one profile, and nothing depends on the time of export. The profile is unsigned
/// (iOS shows "Not Verified"), and installing it does not turn on trust for TLS: the description
/// tells the user where the second switch is.
struct MobileConfig {
    let certificate: X509Certificate
    /// A profile that carries more than the CA: its identifier, name, description and payloads
    /// (a WireGuard device's VPN payload); nil for the CA's own profile.
    var bundle: Bundle?

    /// What a profile that installs the CA with other payloads says of itself.
    struct Bundle {
        var identifier: String
        var displayName: String
        var description: String
        var payloads: [[(String, PropertyListValue)]]
    }

    /// Identifies atsproxy's CA profile on a device: a profile with the same identifier replaces the
    /// installed one, so a new CA's profile replaces the old CA's rather than piling up beside it.
    static let profileIdentifier = "atsproxy.ca"

    var bytes: [UInt8] {
        let der = certificate.der
        let digest = Self.sha256(der)
        let name = certificate.commonName ?? certificate.subject
        let description = """
            Installs \(name), the root certificate of the atsproxy intercepting proxy, so this device \
            can inspect its own HTTPS traffic through the proxy. After installing, turn on full trust \
            for it in Settings → General → About → Certificate Trust Settings; until then apps will \
            refuse the proxy's certificates. Remove the profile when you no longer use the proxy.
            """
        let fingerprintPrefix = digest.prefix(8).map(X509Certificate.hexByte).joined()
        let payload: [(String, PropertyListValue)] = [
            ("PayloadType", .string("com.apple.security.root")),
            ("PayloadVersion", .integer(1)),
            ("PayloadIdentifier", .string("\(Self.profileIdentifier).root.\(fingerprintPrefix)")),
            ("PayloadUUID", .string(Self.uuid(Array(digest[16..<32])))),
            ("PayloadDisplayName", .string(name)),
            ("PayloadDescription", .string("The atsproxy root certificate \(name).")),
            ("PayloadCertificateFileName", .string("atsproxy-ca.cer")),
            ("PayloadContent", .data(der)),
        ]
        // A bundle's UUID comes from its identifier as well, so it differs from the CA's own.
        let profileUUID = bundle.map { Self.uuid(Array(Self.sha256(digest + Array($0.identifier.utf8)).prefix(16))) }
        let profile: [(String, PropertyListValue)] = [
            ("PayloadType", .string("Configuration")),
            ("PayloadVersion", .integer(1)),
            ("PayloadIdentifier", .string(bundle?.identifier ?? Self.profileIdentifier)),
            ("PayloadUUID", .string(profileUUID ?? Self.uuid(Array(digest[0..<16])))),
            ("PayloadDisplayName", .string(bundle?.displayName ?? "atsproxy: \(name)")),
            ("PayloadDescription", .string(bundle.map { $0.description + "\n\n" + description } ?? description)),
            ("PayloadOrganization", .string("atsproxy")),
            // No TargetDeviceType: 1 (iPhone/iPad) would skip a device picker when a watch is paired,
            // but would also stop a Mac from installing the same profile.
            (
                "PayloadContent",
                .array(
                    ([payload] + (bundle?.payloads ?? [])).map { PropertyListNode(.dictionary(ordered: $0)) })
            ),
        ]
        // The policy module's writer: Apple's XML form, every string escaped.
        return Array(PropertyListWriter.document(.dictionary(ordered: profile)).utf8)
    }

    /// A UUID string from 16 bytes, marked as RFC 9562 version 8 (custom: here, from a digest).
    static func uuid(_ bytes: [UInt8]) -> String {
        var bytes = bytes
        bytes[6] = bytes[6] & 0x0F | 0x80
        bytes[8] = bytes[8] & 0x3F | 0x80
        let hex = bytes.map(X509Certificate.hexByte)
        return [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(
            separator: "-")
    }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        _ = EVP_Digest(bytes, bytes.count, &digest, &length, EVP_sha256(), nil)
        return Array(digest.prefix(Int(length)))
    }
}
