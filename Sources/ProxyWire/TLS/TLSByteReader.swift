/// Reads the big-endian integers and length-prefixed vectors of TLS's presentation language
/// (RFC 8446 §3, RFC 5246 §4) from one container, never past its end.
///
/// Every read is checked against what is left, and every vector's length prefix against both
/// the container and the bounds the RFC declares (`opaque legacy_session_id<0..32>`), so a
/// hostile length can neither read out of bounds nor make the parser allocate. Errors name the
/// field so a log can say exactly what was wrong.
struct TLSByteReader {
    /// What this reader walks, named in errors: "ClientHello", "server_name extension".
    let containerName: String
    private let bytes: ArraySlice<UInt8>
    private var position: Int

    init(_ bytes: ArraySlice<UInt8>, containerName: String) {
        self.bytes = bytes
        self.position = bytes.startIndex
        self.containerName = containerName
    }

    var remainingCount: Int { bytes.endIndex - position }
    var isAtEnd: Bool { position == bytes.endIndex }
    /// The bytes not read yet.
    var remainingBytes: ArraySlice<UInt8> { bytes[position...] }

    mutating func readUInt8(_ field: String) throws(TLSParseError) -> UInt8 {
        try requireAvailable(1, field)
        defer { position += 1 }
        return bytes[position]
    }

    mutating func readUInt16(_ field: String) throws(TLSParseError) -> UInt16 {
        try requireAvailable(2, field)
        defer { position += 2 }
        return UInt16(bytes[position]) << 8 | UInt16(bytes[position + 1])
    }

    mutating func readBytes(_ count: Int, _ field: String) throws(TLSParseError) -> ArraySlice<UInt8> {
        try requireAvailable(count, field)
        defer { position += count }
        return bytes[position..<(position + count)]
    }

    /// Reads a vector whose length prefix is `lengthBytes` long (1, 2 or 3) and returns a reader
    /// over its contents. `allowedLengths` is the RFC's `<floor..ceiling>` in bytes;
    /// `elementSize` rejects lengths that would split an element (2 for cipher suites).
    mutating func readVector(
        _ field: String,
        lengthBytes: Int,
        allowedLengths: ClosedRange<Int>,
        elementSize: Int = 1
    ) throws(TLSParseError) -> TLSByteReader {
        let length = try readLength(of: field, lengthBytes: lengthBytes)
        guard length <= remainingCount else {
            throw TLSParseError(
                "\(field) length \(length) exceeds the \(remainingCount) bytes left in the \(containerName)")
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
        return TLSByteReader(contents, containerName: field)
    }

    /// Reads the rest of a vector of 16-bit values (cipher suites, groups, signature schemes).
    mutating func readAllUInt16(_ field: String) throws(TLSParseError) -> [UInt16] {
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
            throw TLSParseError("\(remainingCount) unexpected bytes follow the last field of the \(containerName)")
        }
    }

    private mutating func readLength(of field: String, lengthBytes: Int) throws(TLSParseError) -> Int {
        let prefix = try readBytes(lengthBytes, "\(field) length")
        return prefix.reduce(0) { $0 << 8 | Int($1) }
    }

    private func requireAvailable(_ count: Int, _ field: String) throws(TLSParseError) {
        guard count >= 0, count <= remainingCount else {
            throw TLSParseError(
                "\(containerName) is truncated: \(field) needs \(count) bytes but \(remainingCount) remain")
        }
    }
}
