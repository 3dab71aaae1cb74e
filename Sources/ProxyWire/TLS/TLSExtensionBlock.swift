/// One extension as sent: its type and its still-encoded `extension_data`, borrowed from the
/// hello's reader (so valid only while that reader is).
struct TLSExtension {
    let type: UInt16
    let data: UnsafeBufferPointer<UInt8>

    var name: String { TLSRegistryNames.extensionType(type) }

    /// A reader over `extension_data`, named for errors ("server_name extension").
    var reader: TLSByteReader { TLSByteReader(borrowing: data, container: .extensionContents(type)) }
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
        extensions.reserveCapacity(16)
        // Real hellos carry a dozen or two extensions, where a linear search beats hashing; a
        // hostile one may carry thousands, and a set keeps that linear.
        var seen: Set<UInt16>?
        while !block.isAtEnd {
            let type = try block.readUInt16("extension type")
            let data = try block.readVector(.extensionData(type), lengthBytes: 2, allowedLengths: 0...0xFFFF)
            if extensions.count == 32 { seen = Set(extensions.map(\.type)) }
            let repeated =
                if seen != nil { !seen!.insert(type).inserted } else { extensions.contains { $0.type == type } }
            guard !repeated else {
                throw TLSParseError("extension \(type) (\(TLSRegistryNames.extensionType(type))) appears twice")
            }
            extensions.append(TLSExtension(type: type, data: data.remainingBytes))
        }
        return extensions
    }
}
