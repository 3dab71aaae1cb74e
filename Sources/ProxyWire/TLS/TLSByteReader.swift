/// Reads the big-endian integers and length-prefixed vectors of TLS's presentation language
/// (RFC 8446 §3, RFC 5246 §4) from one container, never past its end.
///
/// Every read is checked against what is left, and every vector's length prefix against both
/// the container and the bounds the RFC declares (`opaque legacy_session_id<0..32>`), so a
/// hostile length can neither read out of bounds nor make the parser allocate. Errors name the
/// field so a log can say exactly what was wrong.
///
/// A reader borrows its bytes: it exists only inside ``reading(_:as:_:)``, and neither it nor
/// the buffers it hands out may be kept past that call, so the parsers copy out the integers and
/// strings they report. A reader that owned an `ArraySlice` cost a reference-count pair for every
/// vector read, and a hello has a few dozen.
struct TLSByteReader {
    /// What this reader walks, named in errors: "ClientHello", "server_name extension".
    let container: TLSFieldName
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0

    /// A reader over part of another reader's bytes, valid as long as those are.
    init(borrowing bytes: UnsafeBufferPointer<UInt8>, container: TLSFieldName) {
        self.bytes = bytes
        self.container = container
    }

    /// Runs `body` with a reader over `bytes`, lent for the length of the call.
    static func reading<Result>(
        _ bytes: ArraySlice<UInt8>,
        as container: TLSFieldName,
        _ body: (inout TLSByteReader) throws(TLSParseError) -> Result
    ) throws(TLSParseError) -> Result {
        try bytes.withUnsafeBufferPointer { buffer throws(TLSParseError) in
            var reader = TLSByteReader(borrowing: buffer, container: container)
            return try body(&reader)
        }
    }

    var remainingCount: Int { bytes.count - position }
    var isAtEnd: Bool { position == bytes.count }
    /// The bytes not read yet, borrowed like the reader's.
    var remainingBytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: bytes[position...]) }

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

    /// The next `count` bytes, borrowed like the reader's.
    mutating func readBytes(_ count: Int, _ field: TLSFieldName) throws(TLSParseError) -> UnsafeBufferPointer<UInt8> {
        try requireAvailable(count, field)
        defer { position += count }
        return UnsafeBufferPointer(rebasing: bytes[position..<(position + count)])
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
        guard length <= remainingCount, allowedLengths.contains(length), elementSize <= 1 || length % elementSize == 0
        else {
            throw vectorLengthError(field, length: length, allowedLengths: allowedLengths, elementSize: elementSize)
        }
        defer { position += length }
        return TLSByteReader(
            borrowing: UnsafeBufferPointer(rebasing: bytes[position..<(position + length)]), container: field)
    }

    /// Reads the rest of a vector of 16-bit values (cipher suites, groups, signature schemes).
    mutating func readAllUInt16(_ field: TLSFieldName) throws(TLSParseError) -> [UInt16] {
        let end = position + remainingCount / 2 * 2
        var values: [UInt16] = []
        values.reserveCapacity(remainingCount / 2)
        for offset in stride(from: position, to: end, by: 2) {
            values.append(UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1]))
        }
        position = end
        // An odd byte left over is a value cut short, reported as reading it would be.
        guard isAtEnd else { throw truncatedError(field, needs: 2) }
        return values
    }

    /// A container must be used up exactly: bytes left over mean some length lied.
    func requireAtEnd() throws(TLSParseError) {
        guard isAtEnd else {
            throw TLSParseError("\(remainingCount) unexpected bytes follow the last field of the \(container)")
        }
    }

    private mutating func readLength(of field: TLSFieldName, lengthBytes: Int) throws(TLSParseError) -> Int {
        guard lengthBytes <= remainingCount else { throw truncatedError(field, lengthNeeds: lengthBytes) }
        var length = 0
        for offset in 0..<lengthBytes { length = length << 8 | Int(bytes[position + offset]) }
        position += lengthBytes
        return length
    }

    private func requireAvailable(_ count: Int, _ field: TLSFieldName) throws(TLSParseError) {
        guard count >= 0, count <= remainingCount else { throw truncatedError(field, needs: count) }
    }

    // The reasons are built apart from the reads: with the string building inline, the reads
    // were too large to inline, and every call paid for a frame and for copying the reader.

    private func truncatedError(_ field: TLSFieldName, needs count: Int) -> TLSParseError {
        TLSParseError("\(container) is truncated: \(field) needs \(count) bytes but \(remainingCount) remain")
    }

    private func truncatedError(_ field: TLSFieldName, lengthNeeds count: Int) -> TLSParseError {
        TLSParseError("\(container) is truncated: \(field) length needs \(count) bytes but \(remainingCount) remain")
    }

    /// Why `readVector` refused a length: the first of its checks that failed.
    private func vectorLengthError(
        _ field: TLSFieldName,
        length: Int,
        allowedLengths: ClosedRange<Int>,
        elementSize: Int
    ) -> TLSParseError {
        if length > remainingCount {
            return TLSParseError(
                "\(field) length \(length) exceeds the \(remainingCount) bytes left in the \(container)")
        }
        if !allowedLengths.contains(length) {
            return TLSParseError(
                "\(field) length \(length) is outside the allowed "
                    + "\(allowedLengths.lowerBound)...\(allowedLengths.upperBound)")
        }
        return TLSParseError(
            elementSize == 2
                ? "\(field) length \(length) is odd"
                : "\(field) length \(length) is not a multiple of \(elementSize)")
    }
}
