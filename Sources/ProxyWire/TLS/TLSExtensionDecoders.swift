/// Decoders for the extensions whose contents the scanner reports. Each one checks every
/// length against its container and that nothing follows the last field.
enum TLSExtensionDecoders {
    /// supported_versions in a ClientHello: `ProtocolVersion versions<2..254>` (RFC 8446 §4.2.1).
    static func clientSupportedVersions(_ ext: TLSExtension) throws(TLSParseError) -> [UInt16] {
        var reader = ext.reader
        var list = try reader.readVector("versions", lengthBytes: 1, allowedLengths: 2...254, elementSize: 2)
        try reader.requireAtEnd()
        return try list.readAllUInt16("version")
    }

    /// supported_versions in a ServerHello: one `selected_version` (RFC 8446 §4.2.1).
    static func serverSelectedVersion(_ ext: TLSExtension) throws(TLSParseError) -> UInt16 {
        var reader = ext.reader
        let version = try reader.readUInt16("selected_version")
        try reader.requireAtEnd()
        return version
    }

    /// signature_algorithms: `SignatureScheme supported_signature_algorithms<2..2^16-2>`
    /// (RFC 8446 §4.2.3); supported_groups: `NamedGroup named_group_list<2..2^16-1>`
    /// (RFC 8446 §4.2.7). Both are lists of 16-bit code points.
    static func uint16List(_ ext: TLSExtension, field: TLSFieldName) throws(TLSParseError) -> [UInt16] {
        var reader = ext.reader
        var list = try reader.readVector(field, lengthBytes: 2, allowedLengths: 2...0xFFFE, elementSize: 2)
        try reader.requireAtEnd()
        return try list.readAllUInt16(field)
    }

    /// extended_master_secret: its `extension_data` is empty (RFC 7627 §5.1).
    static func requireEmpty(_ ext: TLSExtension) throws(TLSParseError) {
        guard ext.data.isEmpty else {
            throw TLSParseError("\(ext.name) extension_data length \(ext.data.count) is not 0")
        }
    }

    /// application_layer_protocol_negotiation: `ProtocolName protocol_name_list<2..2^16-1>`,
    /// each `opaque ProtocolName<1..2^8-1>` (RFC 7301 §3.1).
    static func alpnProtocols(_ ext: TLSExtension) throws(TLSParseError) -> [String] {
        var reader = ext.reader
        var list = try reader.readVector("protocol_name_list", lengthBytes: 2, allowedLengths: 2...0xFFFF)
        try reader.requireAtEnd()
        var names: [String] = []
        while !list.isAtEnd {
            let name = try list.readVector("ProtocolName", lengthBytes: 1, allowedLengths: 1...0xFF)
            names.append(TLSLogSafeText.escaping(name.remainingBytes))
        }
        return names
    }

    /// The server's ALPN answer: the same structure with exactly one name (RFC 7301 §3.1).
    static func alpnSelectedProtocol(_ ext: TLSExtension) throws(TLSParseError) -> String {
        let names = try alpnProtocols(ext)
        guard names.count == 1, let name = names.first else {
            throw TLSParseError("the server's protocol_name_list holds \(names.count) names, not 1")
        }
        return name
    }

    /// server_name: `ServerName server_name_list<1..2^16-1>` (RFC 6066 §3); returns the
    /// host_name entry (name_type 0) if there is one.
    ///
    /// Every entry is read as type plus a 2-byte length, as HostName is; RFC 6066 defines no
    /// other name type. The host must be a host name (``TLSServerNameSyntax``); one that is not
    /// fails with `unrecognized_name`, as OpenSSL's server answers it.
    static func hostName(_ ext: TLSExtension) throws(TLSParseError) -> String? {
        var reader = ext.reader
        var list = try reader.readVector("server_name_list", lengthBytes: 2, allowedLengths: 1...0xFFFF)
        try reader.requireAtEnd()
        var host: String?
        while !list.isAtEnd {
            let nameType = try list.readUInt8("name_type")
            let name = try list.readVector("HostName", lengthBytes: 2, allowedLengths: 1...0xFFFF)
            guard nameType == 0 else { continue }
            // RFC 6066 §3: "The ServerNameList MUST NOT contain more than one name of the same name_type."
            guard host == nil else { throw TLSParseError("server_name_list holds two host_name entries") }
            let bytes = name.remainingBytes
            if let problem = TLSServerNameSyntax.problem(bytes) {
                throw TLSParseError(problem, alert: .unrecognizedName)
            }
            host = String(decoding: bytes, as: UTF8.self)  // ASCII, checked above
        }
        return host
    }
}
