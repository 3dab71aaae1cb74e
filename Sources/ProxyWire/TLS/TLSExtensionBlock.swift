/// One extension as sent: its type and its still-encoded `extension_data`.
struct TLSExtension {
    let type: UInt16
    let data: ArraySlice<UInt8>

    var name: String { TLSRegistryNames.extensionType(type) }

    /// A reader over `extension_data`, named for errors ("server_name extension").
    var reader: TLSByteReader { TLSByteReader(data, containerName: "\(name) extension") }
}

/// The extensions block that ends a ClientHello or ServerHello.
enum TLSExtensionBlock {
    /// Reads the block and checks that it ends the message.
    ///
    /// The block may be missing altogether: RFC 5246 §7.4.1.2 lets a TLS 1.2-or-older hello stop
    /// after the compression methods ("extensions present" is decided by leftover bytes). When
    /// present, its length must match what is left exactly, and no type may repeat
    /// (RFC 8446 §4.2: "There MUST NOT be more than one extension of the same type").
    static func read(from reader: inout TLSByteReader) throws(TLSParseError) -> [TLSExtension] {
        guard !reader.isAtEnd else { return [] }
        var block = try reader.readVector("extensions", lengthBytes: 2, allowedLengths: 0...0xFFFF)
        try reader.requireAtEnd()

        var extensions: [TLSExtension] = []
        var seen = Set<UInt16>()
        while !block.isAtEnd {
            let type = try block.readUInt16("extension type")
            let name = TLSRegistryNames.extensionType(type)
            let data = try block.readVector(
                "\(name) extension (\(type)) extension_data", lengthBytes: 2, allowedLengths: 0...0xFFFF)
            guard seen.insert(type).inserted else {
                throw TLSParseError("extension \(type) (\(name)) appears twice")
            }
            extensions.append(TLSExtension(type: type, data: data.remainingBytes))
        }
        return extensions
    }
}
