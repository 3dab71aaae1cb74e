import LogRecord
import TrafficReport

/// A batch of the daemon's lines as the web loop takes them (a quarter second's worth): most
/// tunnels open and end within one, and their `connection_open` line then says nothing the
/// connection line does not, so it is skipped without being parsed.
///
/// Lines are recognised by the daemon's own writer's order, `"kind":"…","connection_id":N`; a
/// line written otherwise is simply parsed, so the scan can only save work, never lose a line.
enum LineBatch {
    private static let openMarker = marker(.connectionOpen)
    private static let endMarker = marker(.connection)

    /// `"kind":"<kind>","connection_id":`, as the writer puts them side by side.
    private static func marker(_ kind: RecordKind) -> [UInt8] {
        Array(
            "\"\(ConnectionField.kind.rawValue)\":\"\(kind.rawValue)\",\"\(ConnectionField.connectionID.rawValue)\":"
                .utf8)
    }

    /// The entries worth taking, in order: all but the `connection_open` lines of connections
    /// whose connection line is in the same batch. Request records are never scanned.
    static func worthParsing(_ entries: [LoggedEntry]) -> [LoggedEntry] {
        var ended = Set<Int64>()
        var opened: [Int: Int64] = [:]
        for (index, entry) in entries.enumerated() {
            guard case .line(let line) = entry else { continue }
            if let id = connectionID(in: line, after: endMarker) {
                ended.insert(id)
            } else if let id = connectionID(in: line, after: openMarker) {
                opened[index] = id
            }
        }
        guard !opened.isEmpty, !ended.isEmpty else { return entries }
        return entries.enumerated().compactMap { index, entry in
            opened[index].map { ended.contains($0) } == true ? nil : entry
        }
    }

    /// The number after `marker` in `line`, when the marker is there and a number follows.
    static func connectionID(in line: [UInt8], after marker: [UInt8]) -> Int64? {
        guard line.count > marker.count else { return nil }
        var start = 0
        let last = line.count - marker.count
        while start <= last {
            guard let first = line[start...last].firstIndex(of: marker[0]) else { return nil }
            if line[first..<(first + marker.count)].elementsEqual(marker) {
                var value: Int64 = 0
                var index = first + marker.count
                var digits = 0
                while index < line.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(line[index]), digits < 18 {
                    value = value * 10 + Int64(line[index] - UInt8(ascii: "0"))
                    index += 1
                    digits += 1
                }
                return digits > 0 ? value : nil
            }
            start = first + 1
        }
        return nil
    }
}
