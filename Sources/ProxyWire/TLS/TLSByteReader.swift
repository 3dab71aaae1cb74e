/// Reads the big-endian integers and length-prefixed vectors of TLS's presentation language
/// (RFC 8446 §3, RFC 5246 §4) from one container, never past its end.
///
/// Every read is checked against what is left, and every vector's length prefix against both
/// the container and the bounds the RFC declares (`opaque legacy_session_id<0..32>`), so a
/// hostile length can neither read out of bounds nor make the parser allocate. Errors name the
/// field so a log can say exactly what was wrong.
struct TLSByteReader {
    /// What this reader walks, named in errors: "ClientHello", "server_name extension".
    let container: TLSFieldName
    private let bytes: ArraySlice<UInt8>
    private var position: Int

    init(_ bytes: ArraySlice<UInt8>, container: TLSFieldName) {
        self.bytes = bytes
        self.position = bytes.startIndex
        self.container = container
    }

    var remainingCount: Int { bytes.endIndex - position }
    var isAtEnd: Bool { position == bytes.endIndex }
    /// The bytes not read yet.
    var remainingBytes: ArraySlice<UInt8> { bytes[position...] }

    mutating func readUInt8(_ field: TLSFieldName) throws(TLSParseError) -> UInt8 {
        try requireAvailable(1, field)
        defer { position += 1 }
        return bytes[position]
    }

    mutating func readUInt16(_ field: TLSFieldName) throws(TLSParseError) -> UInt16 {
        try requireAvailable(2, field)
        defer { position += 2 }
        return UInt16(bytes[position]) << 8 | UInt16(bytes[position + 1])
    }

    mutating func readBytes(_ count: Int, _ field: TLSFieldName) throws(TLSParseError) -> ArraySlice<UInt8> {
        try requireAvailable(count, field)
        defer { position += count }
        return bytes[position..<(position + count)]
    }

    /// Reads a vector whose length prefix is `lengthBytes` long (1, 2 or 3) and returns a reader
    /// over its contents. `allowedLengths` is the RFC's `<floor..ceiling>` in bytes;
    /// `elementSize` rejects lengths that would split an element (2 for cipher suites).
    mutating func readVector(
        _ field: TLSFieldName,
        lengthBytes: Int,
        allowedLengths: ClosedRange<Int>,
        elementSize: Int = 1
    ) throws(TLSParseError) -> TLSByteReader {
        let length = try readLength(of: field, lengthBytes: lengthBytes)
        guard length <= remainingCount else {
            throw TLSParseError(
                "\(field) length \(length) exceeds the \(remainingCount) bytes left in the \(container)")
        }
        guard allowedLengths.contains(length) else {
            throw TLSParseError(
                "\(field) length \(length) is outside the allowed "
                    + "\(allowedLengths.lowerBound)...\(allowedLengths.upperBound)")
        }
        guard elementSize <= 1 || length % elementSize == 0 else {
            throw TLSParseError(
                elementSize == 2
                    ? "\(field) length \(length) is odd"
                    : "\(field) length \(length) is not a multiple of \(elementSize)")
        }
        let contents = try readBytes(length, field)
        return TLSByteReader(contents, container: field)
    }

    /// Reads the rest of a vector of 16-bit values (cipher suites, groups, signature schemes).
    mutating func readAllUInt16(_ field: TLSFieldName) throws(TLSParseError) -> [UInt16] {
        var values: [UInt16] = []
        values.reserveCapacity(remainingCount / 2)
        while !isAtEnd {
            values.append(try readUInt16(field))
        }
        return values
    }

    /// A container must be used up exactly: bytes left over mean some length lied.
    func requireAtEnd() throws(TLSParseError) {
        guard isAtEnd else {
            throw TLSParseError("\(remainingCount) unexpected bytes follow the last field of the \(container)")
        }
    }

    private mutating func readLength(of field: TLSFieldName, lengthBytes: Int) throws(TLSParseError) -> Int {
        guard lengthBytes <= remainingCount else {
            throw TLSParseError(
                "\(container) is truncated: \(field) length needs \(lengthBytes) bytes but \(remainingCount) remain")
        }
        var length = 0
        for offset in 0..<lengthBytes { length = length << 8 | Int(bytes[position + offset]) }
        position += lengthBytes
        return length
    }

    private func requireAvailable(_ count: Int, _ field: TLSFieldName) throws(TLSParseError) {
        guard count >= 0, count <= remainingCount else {
            throw TLSParseError(
                "\(container) is truncated: \(field) needs \(count) bytes but \(remainingCount) remain")
        }
    }
}
