/// The few bytes a hello scanner gathers across chunks before it can decide anything: a record
/// header (5 bytes) or an alert's body (2). They are held inline, because an array for them cost
/// an allocation in each direction of every tunnel.
struct TLSPendingBytes: RandomAccessCollection, Sendable {
    /// Room for a record header (`TLSRecordHeader.size`), the most that is ever pending.
    private var storage = InlineArray<5, UInt8>(repeating: 0)
    private(set) var endIndex = 0

    var startIndex: Int { 0 }

    subscript(position: Int) -> UInt8 {
        precondition(position < endIndex, "index \(position) is past the \(endIndex) pending bytes")
        return storage[position]
    }

    /// Traps past five bytes: callers take at most what a header or an alert still needs.
    mutating func append(contentsOf bytes: some Collection<UInt8>) {
        for byte in bytes {
            storage[endIndex] = byte
            endIndex += 1
        }
    }

    mutating func removeAll() {
        endIndex = 0
    }
}
