/// The values of a JSON Lines buffer (one JSON text per line), as the proxy writes its log.
///
/// Each non-blank line is parsed on its own and comes with its line number, so a reader can
/// report `file:line:column: reason` for a damaged line (a log cut short by a crash, say) and
/// carry on with the next. Errors are positioned in the whole buffer: their offset counts from
/// the buffer's start and their line is the file's line.
///
/// Lines end at LF; a CR before it is dropped. Blank lines (spaces, tabs, CR only) are skipped,
/// but still counted.
public struct JSONLines: Sequence, Sendable {
    public struct Line: Sendable, Equatable {
        /// 1-based line number in the buffer.
        public var number: Int
        /// The line's value, or why it is not one.
        public var result: Result<JSONValue, JSONParseError>

        public init(number: Int, result: Result<JSONValue, JSONParseError>) {
            self.number = number
            self.result = result
        }
    }

    private let bytes: [UInt8]

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    public init(_ text: String) {
        self.bytes = Array(text.utf8)
    }

    public func makeIterator() -> Iterator { Iterator(bytes: bytes) }

    public struct Iterator: IteratorProtocol {
        private let bytes: [UInt8]
        private var position = 0
        private var lineNumber = 0

        init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        public mutating func next() -> Line? {
            bytes.withUnsafeBufferPointer { buffer in
                while position < buffer.count {
                    lineNumber += 1
                    let start = position
                    var end = start
                    while end < buffer.count && buffer[end] != UInt8(ascii: "\n") { end += 1 }
                    position = end + 1
                    if end > start && buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                    let line = UnsafeBufferPointer(rebasing: buffer[start..<end])
                    guard
                        !line.allSatisfy({
                            $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r")
                        })
                    else { continue }
                    let number = lineNumber
                    let result = JSONParser.parse(line).mapError { error in
                        // The line holds no LF, so the error is on line 1 of it: move it to the
                        // buffer's coordinates. The column is already right.
                        JSONParseError(
                            reason: error.reason, offset: start + error.offset, line: number + error.line - 1,
                            column: error.column)
                    }
                    return Line(number: number, result: result)
                }
                return nil
            }
        }
    }
}
