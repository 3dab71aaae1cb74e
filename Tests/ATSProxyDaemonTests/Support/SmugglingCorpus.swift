import Foundation

/// One entry of `Tests/ATSProxyDaemonTests/Smuggling/corpus.jsonl` (its README.md says the format):
/// a payload and where it comes from.
struct SmugglingEntry: Sendable {
    var name: String
    var source: String
    var reference: String
    var link: String
    var note: String
    var splits: [SmugglingSplit]
    /// The payload with its placeholders (`${T}`, `${H}`, `${S}`, `${P}`, `${T:word}`, `${id}`).
    var template: [UInt8]
}

/// How a job's bytes are written: at once, a write per line, or the first head a byte per write.
enum SmugglingSplit: String, Sendable, CaseIterable {
    case whole
    case lines
    case headBytes = "head-bytes"

    func writes(_ bytes: [UInt8]) -> [[UInt8]] {
        switch self {
        case .whole:
            return [bytes]
        case .lines:
            var writes: [[UInt8]] = []
            var current: [UInt8] = []
            for byte in bytes {
                current.append(byte)
                if byte == UInt8(ascii: "\n") {
                    writes.append(current)
                    current = []
                }
            }
            return current.isEmpty ? writes : writes + [current]
        case .headBytes:
            // The first head ends at the first empty line (CRLF CRLF or LF LF, whichever comes first).
            let crlf = bytes.firstRange(of: Array("\r\n\r\n".utf8)).map { $0.upperBound }
            let lf = bytes.firstRange(of: Array("\n\n".utf8)).map { $0.upperBound }
            let end = [crlf, lf].compactMap { $0 }.min() ?? bytes.count
            let rest = Array(bytes[end...])
            return bytes[..<end].map { [$0] } + (rest.isEmpty ? [] : [rest])
        }
    }
}

/// Where a job goes: plain `http://` through the proxy, or requests inside an intercepted CONNECT.
enum SmugglingMode: String, Sendable {
    case plain
    case intercept

    /// The name every intercepted CONNECT goes to (the hosts file maps it to 127.0.0.1).
    static let interceptHost = "corpus.smug.test"

    /// The host name of a job's carrier in plain mode: the marker the proxy's log line carries.
    static func plainHost(id: String) -> String { "carrier-\(id).smug.test" }
}

enum SmugglingCorpus {
    /// The directory with the corpus, its generator, the origin and the client.
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Smuggling")

    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    struct FormatError: Error, CustomStringConvertible {
        var description: String
    }

    /// The entries of corpus.jsonl, in order.
    static func load() throws -> [SmugglingEntry] {
        let text = try String(contentsOfFile: path("corpus.jsonl"), encoding: .utf8)
        return try text.split(separator: "\n").enumerated().map { index, line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let name = object["name"] as? String, let source = object["source"] as? String,
                let reference = object["reference"] as? String, let link = object["link"] as? String,
                let note = object["note"] as? String, let splitNames = object["splits"] as? [String],
                let text = object["bytes"] as? String
            else { throw FormatError(description: "corpus.jsonl:\(index + 1): not an entry") }
            let splits = try splitNames.map { name in
                guard let split = SmugglingSplit(rawValue: name) else {
                    throw FormatError(description: "corpus.jsonl:\(index + 1): no split \"\(name)\"")
                }
                return split
            }
            guard let template = text.latin1Bytes else {
                throw FormatError(description: "corpus.jsonl:\(index + 1): a code point above U+00FF in its bytes")
            }
            return SmugglingEntry(
                name: name, source: source, reference: reference, link: link, note: note, splits: splits,
                template: template)
        }
    }

    /// The request every job ends with, which the proxy must relay as one of its own and after
    /// which it closes the connection.
    static let followUp = Array("GET ${T:follow} HTTP/1.1\r\nHost: ${H}\r\nConnection: close\r\n\r\n".utf8)

    /// `template` with its placeholders filled for job `id` (four digits) in `mode`, whose origin
    /// listens on `port`; nil when it holds a placeholder the corpus does not define.
    static func expand(_ template: [UInt8], mode: SmugglingMode, port: UInt16, id: String) -> [UInt8]? {
        let authority =
            mode == .plain ? "\(SmugglingMode.plainHost(id: id)):\(port)" : "\(SmugglingMode.interceptHost):\(port)"
        let scheme = mode == .plain ? "http" : "https"
        func value(_ name: String) -> String? {
            let path = "/carrier-\(id)"
            switch name {
            case "id": return id
            case "H": return authority
            case "S": return "\(scheme)://\(authority)"
            case "P": return path
            case "T": return mode == .plain ? "http://\(authority)\(path)" : path
            default:
                guard name.hasPrefix("T:"), name.count > 2,
                    name.dropFirst(2).allSatisfy({ ("a"..."z").contains($0) })
                else { return nil }
                let path = "/\(name.dropFirst(2))-\(id)"
                return mode == .plain ? "http://\(authority)\(path)" : path
            }
        }
        var result: [UInt8] = []
        var index = 0
        while index < template.count {
            if template[index] == UInt8(ascii: "$"), index + 1 < template.count,
                template[index + 1] == UInt8(ascii: "{"),
                let close = template[(index + 2)...].firstIndex(of: UInt8(ascii: "}"))
            {
                guard let filled = value(String(decoding: template[(index + 2)..<close], as: UTF8.self)) else {
                    return nil
                }
                result += Array(filled.utf8)
                index = close + 1
            } else {
                result.append(template[index])
                index += 1
            }
        }
        return result
    }
}

/// A request marker: `word-NNNN`, the word saying which request of a job (carrier, follow,
/// smuggled…) and the four digits which job.
struct SmugglingMarker: Hashable, Sendable, CustomStringConvertible {
    var word: String
    var id: String

    var description: String { "\(word)-\(id)" }

    /// The last marker in `text`: a run of lower-case letters, '-', four digits not followed by
    /// a fifth.
    static func last(in text: String) -> SmugglingMarker? {
        let bytes = Array(text.utf8)
        var found: SmugglingMarker?
        for dash in bytes.indices where bytes[dash] == UInt8(ascii: "-") {
            let digitsEnd = dash + 5
            guard digitsEnd <= bytes.count, bytes[(dash + 1)..<digitsEnd].allSatisfy(isDigit),
                digitsEnd == bytes.count || !isDigit(bytes[digitsEnd])
            else { continue }
            var wordStart = dash
            while wordStart > 0, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(bytes[wordStart - 1]) {
                wordStart -= 1
            }
            guard wordStart < dash else { continue }
            found = SmugglingMarker(
                word: String(decoding: bytes[wordStart..<dash], as: UTF8.self),
                id: String(decoding: bytes[(dash + 1)..<digitsEnd], as: UTF8.self))
        }
        return found
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
}

extension String {
    /// The string's code points as bytes, when each is at most U+00FF (the corpus's and the
    /// scripts' way of carrying bytes in JSON); nil otherwise.
    var latin1Bytes: [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(unicodeScalars.count)
        for scalar in unicodeScalars {
            guard scalar.value <= 0xFF else { return nil }
            bytes.append(UInt8(scalar.value))
        }
        return bytes
    }
}

extension [UInt8] {
    /// The bytes as a string of the code points U+0000-U+00FF (see ``Swift/String/latin1Bytes``).
    var latin1String: String {
        var scalars = String.UnicodeScalarView()
        for byte in self { scalars.append(Unicode.Scalar(byte)) }
        return String(scalars)
    }

    /// The bytes as a reader wants them in a report: printable ASCII as it is, CR, LF and tab as
    /// \r, \n, \t, every other byte as \xNN.
    var escaped: String {
        map { byte -> String in
            switch byte {
            case UInt8(ascii: "\r"): return "\\r"
            case UInt8(ascii: "\n"): return "\\n"
            case UInt8(ascii: "\t"): return "\\t"
            case UInt8(ascii: "\\"): return "\\\\"
            case 0x20...0x7E: return String(UnicodeScalar(byte))
            default: return String(format: "\\x%02x", byte)
            }
        }.joined()
    }
}
