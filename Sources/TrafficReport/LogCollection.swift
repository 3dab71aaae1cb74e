import ATSPolicy

/// Every connection record of several log files (the current one and its rotated, possibly
/// compressed, predecessors), with the lines that could not be used.
///
/// A damaged line is skipped, not fatal: the last line of a log whose daemon crashed mid-write is
/// half a JSON object, and one such line must not make a day's report impossible. Each skipped
/// line is kept with its file, line and column so the command can warn about it.
public struct LogCollection: Sendable {
    public struct FileSummary: Sendable, Equatable {
        public var path: String
        public var wasCompressed: Bool
        /// Records read from the file.
        public var records: Int
        /// Why a compressed file was read only in part.
        public var damage: String?
    }

    public struct SkippedLine: Sendable, Equatable, CustomStringConvertible {
        public var path: String
        public var line: Int
        /// nil when the line is JSON but not a connection record.
        public var column: Int?
        public var reason: String

        /// `atsproxy.log:41:17: unterminated string`: the place first, as compilers print it.
        public var description: String {
            "\(path):\(line)" + (column.map { ":\($0)" } ?? "") + ": \(reason)"
        }
    }

    public private(set) var records: [LoggedConnection] = []
    public private(set) var files: [FileSummary] = []
    public private(set) var skipped: [SkippedLine] = []

    public init() {}

    /// Reads each path in turn; stops at the first file that cannot be read at all.
    public static func read(paths: [String]) throws(LogFileError) -> LogCollection {
        var collection = LogCollection()
        for path in paths {
            collection.add(try LogFile.read(path: path))
        }
        return collection
    }

    /// Adds one file's records (for tests and callers holding the bytes already).
    public mutating func add(_ file: LogFile) {
        var count = 0
        for line in JSONLines(file.bytes) {
            switch line.result {
            case .failure(let error):
                skipped.append(SkippedLine(path: file.path, line: line.number, column: error.column, reason: error.reason))
            case .success(let value):
                do {
                    records.append(try LoggedConnection(json: value))
                    count += 1
                } catch {
                    skipped.append(SkippedLine(path: file.path, line: line.number, column: nil, reason: error.description))
                }
            }
        }
        files.append(FileSummary(path: file.path, wasCompressed: file.wasCompressed, records: count, damage: file.damage))
    }
}
