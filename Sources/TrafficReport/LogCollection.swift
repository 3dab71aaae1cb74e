import ATSPolicy
import LogRecord
import TextFormats

/// Every connection record of several log files (the current one and its rotated, possibly
/// compressed, predecessors), the request lines of intercept mode (`"kind":"request"` and
/// `"tls_stream"`, kept apart: they are not connections), and the lines that could not be used.
///
/// A damaged line is skipped, not fatal: the last line of a log whose daemon crashed mid-write is
/// half a JSON object, and one such line must not make a day's report impossible. Each skipped
/// line is kept with its file, line and column so the command can warn about it.
package struct LogCollection: Sendable {
    package struct FileSummary: Sendable, Equatable {
        package var path: String
        package var wasCompressed: Bool
        /// Connection records read from the file.
        package var records: Int
        /// Request lines (and `tls_stream` lines) read from the file.
        package var requests: Int
        /// Why a compressed file was read only in part.
        package var damage: String?
    }

    package struct SkippedLine: Sendable, Equatable, CustomStringConvertible {
        package var path: String
        package var line: Int
        /// nil when the line is JSON but not a connection record.
        package var column: Int?
        package var reason: String
        /// The line's `kind` (`connection` when it has none) when it is a JSON object, nil when it is
        /// not JSON or its `kind` is not a string: `har` warns only about the lines it would have read.
        package var kind: String?

        /// `atsproxy.log:41:17: unterminated string`: the place first, as compilers print it.
        package var description: String {
            "\(path):\(line)" + (column.map { ":\($0)" } ?? "") + ": \(reason)"
        }
    }

    package private(set) var records: [LoggedConnection] = []
    /// The request and `tls_stream` lines, in the order read.
    package private(set) var requests: [LoggedRequest] = []
    package private(set) var files: [FileSummary] = []
    package private(set) var skipped: [SkippedLine] = []

    package init() {}

    /// Keeps only these lines (``selecting(_:)``); the files and skipped lines stay as read.
    mutating func keep(records: [LoggedConnection], requests: [LoggedRequest]) {
        self.records = records
        self.requests = requests
    }

    /// Reads each path in turn; stops at the first file that cannot be read at all.
    package static func read(paths: [String]) throws(LogFileError) -> LogCollection {
        var collection = LogCollection()
        for path in paths {
            collection.add(try LogFile.read(path: path))
        }
        return collection
    }

    /// Adds one file's records (for tests and callers holding the bytes already).
    package mutating func add(_ file: LogFile) {
        var count = 0
        var requestCount = 0
        for line in JSONLines(file.bytes) {
            switch line.result {
            case .failure(let error):
                skipped.append(
                    SkippedLine(
                        path: file.path, line: line.number, column: error.column, reason: error.reason, kind: nil))
            case .success(let value):
                // Not an object: no kind, and LoggedConnection says why it is no record.
                let kind = value.objectValue == nil ? nil : LoggedRequest.kind(of: value)
                do throws(LogRecordError) {
                    if kind == RecordKind.connection.rawValue || value.objectValue == nil {
                        records.append(try LoggedConnection(json: value))
                        count += 1
                    } else if let kind, RecordKind(rawValue: kind)?.isRequest == true {
                        requests.append(try LoggedRequest(json: value))
                        requestCount += 1
                    } else {
                        throw LogRecordError(
                            kind.map { "\"kind\" is \"\($0)\", not connection, request or tls_stream" }
                                ?? "\"kind\" is not a string", record: "log record")
                    }
                } catch {
                    skipped.append(
                        SkippedLine(
                            path: file.path, line: line.number, column: nil, reason: error.description, kind: kind))
                }
            }
        }
        files.append(
            FileSummary(
                path: file.path, wasCompressed: file.wasCompressed, records: count, requests: requestCount,
                damage: file.damage))
    }
}
