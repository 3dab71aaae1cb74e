import TextFormats

/// What changed between two versions of a policy file, key by key: what `atsproxyctl reload`
/// prints so an operator sees that the edit they meant is the one that took effect.
///
/// Only the ATS dictionary is compared (an Info.plist's other keys do not matter here). Each leaf
/// is named by its key path, `NSExceptionDomains › example.com › NSIncludesSubdomains`.
public struct PolicyKeyChanges: Sendable, Equatable {
    public struct Change: Sendable, Equatable {
        public var path: String
        /// The value before (nil when the key was added) and after (nil when it was removed).
        public var old: String?
        public var new: String?
    }

    public var added: [Change] = []
    public var removed: [Change] = []
    public var changed: [Change] = []

    public var isEmpty: Bool { added.isEmpty && removed.isEmpty && changed.isEmpty }

    public init(from old: PropertyListNode?, to new: PropertyListNode?) {
        let before = old.map(Self.leaves) ?? []
        let after = new.map(Self.leaves) ?? []
        let beforeByPath = Dictionary(before, uniquingKeysWith: { _, last in last })
        let afterByPath = Dictionary(after, uniquingKeysWith: { _, last in last })
        for (path, value) in after {
            switch beforeByPath[path] {
            case nil: added.append(Change(path: path, old: nil, new: value))
            case let previous? where previous != value: changed.append(Change(path: path, old: previous, new: value))
            default: break
            }
        }
        for (path, value) in before where afterByPath[path] == nil {
            removed.append(Change(path: path, old: value, new: nil))
        }
    }

    /// One line per change: `+ path = value`, `- path = value`, `~ path: old → new`.
    public var lines: [String] {
        added.map { "+ \($0.path) = \($0.new ?? "")" } + removed.map { "- \($0.path) = \($0.old ?? "")" }
            + changed.map { "~ \($0.path): \($0.old ?? "") → \($0.new ?? "")" }
    }

    public var json: JSONValue {
        func list(_ changes: [Change]) -> JSONValue {
            .array(
                changes.map {
                    .object([("path", .string($0.path)), ("old", .optional($0.old)), ("new", .optional($0.new))])
                })
        }
        return .object([("added", list(added)), ("removed", list(removed)), ("changed", list(changed))])
    }

    /// The leaves of the ATS dictionary in file order, as (key path, value in words).
    private static func leaves(_ root: PropertyListNode) -> [(String, String)] {
        var start = root
        if case .dictionary = root.value, let ats = root.value.lookup(ATSKey.appTransportSecurity) { start = ats.value }
        var out: [(String, String)] = []
        collect(start, path: [], into: &out)
        return out
    }

    private static func collect(_ node: PropertyListNode, path: [String], into out: inout [(String, String)]) {
        let name = path.joined(separator: " › ")
        switch node.value {
        case .dictionary(let entries):
            if entries.isEmpty, !path.isEmpty { out.append((name, "{}")) }
            for entry in entries { collect(entry.value, path: path + [entry.key], into: &out) }
        case .array(let items):
            if items.isEmpty { out.append((name, "[]")) }
            for (index, item) in items.enumerated() { collect(item, path: path + ["[\(index)]"], into: &out) }
        case .bool(let value): out.append((name, value ? "true" : "false"))
        case .integer(let value): out.append((name, String(value)))
        case .unsignedInteger(let value): out.append((name, String(value)))
        case .real(let value): out.append((name, String(value)))
        case .string(let value): out.append((name, "\"\(value)\""))
        case .data(let bytes):
            out.append((name, "<data, \(bytes.count) bytes, sha256 \(SHA256.hex(of: bytes).prefix(12))>"))
        case .date(let seconds): out.append((name, DateFormat.rfc3339(Int64(seconds))))
        case .uid(let value): out.append((name, "<uid \(value)>"))
        }
    }
}
