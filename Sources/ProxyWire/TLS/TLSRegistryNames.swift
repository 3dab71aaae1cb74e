/// IANA "TLS Parameters" names for the code points that appear in failure reasons, so a log
/// says "certificate (handshake type 11)" rather than a bare number.
enum TLSRegistryNames {
    /// TLS ContentType (RFC 8446 §5.1, RFC 5246 §6.2.1).
    static func contentType(_ type: UInt8) -> String {
        switch type {
        case TLSContentType.changeCipherSpec: "change_cipher_spec"
        case TLSContentType.alert: "alert"
        case TLSContentType.handshake: "handshake"
        case TLSContentType.applicationData: "application_data"
        case 24: "heartbeat"
        default: "unknown"
        }
    }

    /// HandshakeType (RFC 8446 §4, RFC 5246 §7.4).
    static func handshakeType(_ type: UInt8) -> String {
        switch type {
        case 0: "hello_request"
        case 1: "client_hello"
        case 2: "server_hello"
        case 4: "new_session_ticket"
        case 5: "end_of_early_data"
        case 8: "encrypted_extensions"
        case 11: "certificate"
        case 12: "server_key_exchange"
        case 13: "certificate_request"
        case 14: "server_hello_done"
        case 15: "certificate_verify"
        case 16: "client_key_exchange"
        case 20: "finished"
        case 24: "key_update"
        case 254: "message_hash"
        default: "unknown"
        }
    }

    /// ExtensionType (RFC 8446 §4.2 and the RFCs that registered the rest).
    static func extensionType(_ type: UInt16) -> String {
        switch type {
        case TLSExtensionType.serverName: "server_name"
        case 1: "max_fragment_length"
        case 5: "status_request"
        case TLSExtensionType.supportedGroups: "supported_groups"
        case 11: "ec_point_formats"
        case TLSExtensionType.signatureAlgorithms: "signature_algorithms"
        case TLSExtensionType.applicationLayerProtocolNegotiation: "application_layer_protocol_negotiation"
        case 18: "signed_certificate_timestamp"
        case 21: "padding"
        case 22: "encrypt_then_mac"
        case TLSExtensionType.extendedMasterSecret: "extended_master_secret"
        case 27: "compress_certificate"
        case 35: "session_ticket"
        case 41: "pre_shared_key"
        case 42: "early_data"
        case TLSExtensionType.supportedVersions: "supported_versions"
        case 44: "cookie"
        case 45: "psk_key_exchange_modes"
        case 49: "post_handshake_auth"
        case 50: "signature_algorithms_cert"
        case 51: "key_share"
        case 65037: "encrypted_client_hello"
        case 65281: "renegotiation_info"
        default: isGREASE(type) ? "GREASE" : "unknown"
        }
    }
}

/// The record content types the scanner reacts to (RFC 8446 §5.1).
package enum TLSContentType {
    package static let changeCipherSpec: UInt8 = 20
    package static let alert: UInt8 = 21
    package static let handshake: UInt8 = 22
    package static let applicationData: UInt8 = 23
}

/// The handshake message types the scanner looks for (RFC 8446 §4).
enum TLSHandshakeType {
    static let clientHello: UInt8 = 1
    static let serverHello: UInt8 = 2
}

/// The extensions whose contents the scanner decodes (RFC 8446 §4.2).
enum TLSExtensionType {
    static let serverName: UInt16 = 0
    static let supportedGroups: UInt16 = 10
    static let signatureAlgorithms: UInt16 = 13
    static let applicationLayerProtocolNegotiation: UInt16 = 16
    static let extendedMasterSecret: UInt16 = 23
    static let supportedVersions: UInt16 = 43
}
