import TextFormats

/// Builds a ``PropertyListNode`` tree from the tokens of an XML property list.
///
/// Containers are kept on an explicit stack instead of the call stack, so no input can
/// exhaust the thread's stack; ``maximumDepth`` still rejects absurd nesting.
struct XMLPropertyListParser {
    static let maximumDepth = 512

    private var tokenizer: XMLTokenizer

    init(_ bytes: [UInt8]) throws(PropertyListError) {
        let start = SourceLocation(line: 1, column: 1)
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) {
            let reason = "UTF-16 encoded property lists are not supported; convert the file to UTF-8"
            throw PropertyListError(reason, at: start)
        }
        let documentStart = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        guard bytes.count > documentStart else { throw PropertyListError("the file is empty", at: start) }
        tokenizer = try XMLTokenizer(bytes, documentStart: documentStart)
    }

    mutating func parse() throws(PropertyListError) -> PropertyListNode {
        let first = try nextMarkup(allowingDoctype: true, textError: "unexpected text outside of an element")
        let root: PropertyListNode
        switch first {
        case .startTag(let tag) where tag.name == "plist":
            root = try parsePlistElement(tag)
        case .startTag(let tag):
            // CoreFoundation also reads a bare value without the <plist> wrapper.
            root = try parseValue(tag)
        case .endTag(let name, let offset):
            throw error("unexpected </\(name)>", at: offset)
        default:
            throw error("expected a root element but reached the end of the file", at: first.offset)
        }
        let trailing = try nextMarkup(allowingDoctype: false, textError: "unexpected content after the root element")
        guard case .endOfInput = trailing else {
            throw error("unexpected content after the root element", at: trailing.offset)
        }
        return root
    }

    // MARK: - Elements

    private mutating func parsePlistElement(_ plist: XMLStartTag) throws(PropertyListError) -> PropertyListNode {
        let exactlyOne = "<plist> must contain exactly one value"
        guard !plist.isEmpty else { throw error(exactlyOne, at: plist.offset) }
        let value: PropertyListNode
        switch try nextMarkup(allowingDoctype: false, textError: "unexpected text inside <plist>") {
        case .startTag(let tag):
            value = try parseValue(tag)
        case .endTag(let name, _) where name == "plist":
            throw error(exactlyOne, at: plist.offset)
        case .endTag(let name, let offset):
            throw error("expected </plist> but found </\(name)>", at: offset)
        default:
            throw error("unterminated <plist> element", at: plist.offset)
        }
        switch try nextMarkup(allowingDoctype: false, textError: "unexpected text inside <plist>") {
        case .endTag(let name, _) where name == "plist":
            return value
        case .startTag(let tag):
            throw error("\(exactlyOne), found a second one: <\(tag.name)>", at: tag.offset)
        case .endTag(let name, let offset):
            throw error("expected </plist> but found </\(name)>", at: offset)
        default:
            throw error("unterminated <plist> element", at: plist.offset)
        }
    }

    /// A dictionary or array still waiting for its closing tag.
    private struct OpenContainer {
        let name: String
        let location: SourceLocation
        var elements: [PropertyListNode] = []
        var entries: [PropertyListEntry] = []
        /// A dictionary's key that still waits for its value.
        var pendingKey: (key: String, location: SourceLocation)?

        var isDictionary: Bool { name == "dict" }

        var node: PropertyListNode {
            PropertyListNode(isDictionary ? .dictionary(entries) : .array(elements), at: location)
        }

        mutating func append(_ node: PropertyListNode) {
            if let pendingKey {
                entries.append(PropertyListEntry(key: pendingKey.key, keyLocation: pendingKey.location, value: node))
                self.pendingKey = nil
            } else {
                elements.append(node)
            }
        }
    }

    /// Parses the value that `first` opens, with everything nested in it.
    private mutating func parseValue(_ first: XMLStartTag) throws(PropertyListError) -> PropertyListNode {
        var open: [OpenContainer] = []
        var nextTag: XMLStartTag? = first
        while true {
            let finished: PropertyListNode
            if let tag = nextTag {
                nextTag = nil
                let location = tokenizer.location(at: tag.offset)
                if tag.name == "dict" || tag.name == "array", !tag.isEmpty {
                    guard open.count < Self.maximumDepth else {
                        throw error("nesting deeper than \(Self.maximumDepth) levels", at: tag.offset)
                    }
                    open.append(OpenContainer(name: tag.name, location: location))
                    continue
                }
                finished = PropertyListNode(try parseLeaf(tag), at: location)
            } else {
                let container = open[open.count - 1]
                switch try nextMarkup(allowingDoctype: false, textError: "unexpected text inside <\(container.name)>") {
                case .startTag(let tag) where tag.name == "key" && container.isDictionary:
                    if let pending = container.pendingKey { throw missingValue(for: pending) }
                    open[open.count - 1].pendingKey = (try parseString(tag), tokenizer.location(at: tag.offset))
                    continue
                case .startTag(let tag):
                    if container.isDictionary, container.pendingKey == nil {
                        throw error("expected <key> but found <\(tag.name)>", at: tag.offset)
                    }
                    nextTag = tag
                    continue
                case .endTag(let name, let offset):
                    guard name == container.name else {
                        throw error("expected </\(container.name)> but found </\(name)>", at: offset)
                    }
                    if let pending = container.pendingKey { throw missingValue(for: pending) }
                    finished = open.removeLast().node
                default:
                    throw PropertyListError("unterminated <\(container.name)> element", at: container.location)
                }
            }
            if open.isEmpty { return finished }
            open[open.count - 1].append(finished)
        }
    }

    /// Parses every element but a non-empty dict or array.
    private mutating func parseLeaf(_ tag: XMLStartTag) throws(PropertyListError) -> PropertyListValue {
        switch tag.name {
        case "dict": return .dictionary([])
        case "array": return .array([])
        case "string": return .string(try parseString(tag))
        case "true", "false":
            let content = try readContent(of: tag)
            if let text = content.trimmed() { throw error("<\(tag.name)> must be empty", at: text.offset) }
            return .bool(tag.name == "true")
        case "integer", "real", "date":
            guard let text = try readContent(of: tag).trimmed() else {
                throw error("empty <\(tag.name)>", at: tag.offset)
            }
            do throws(XMLScalar.Invalid) {
                switch tag.name {
                case "integer": return try XMLScalar.integer(text.value)
                case "real": return .real(try XMLScalar.real(text.value))
                default: return .date(try XMLScalar.date(text.value))
                }
            } catch {
                throw self.error(error.reason, at: text.offset)
            }
        case "data": return .data(try parseData(tag))
        case "key": throw error("<key> is only allowed inside <dict>", at: tag.offset)
        case "plist": throw error("<plist> is only allowed as the root element", at: tag.offset)
        default: throw error("unknown element <\(tag.name)>", at: tag.offset)
        }
    }

    /// The text of a <string> or <key>, exactly as written: whitespace is significant.
    private mutating func parseString(_ tag: XMLStartTag) throws(PropertyListError) -> String {
        try readContent(of: tag).pieces.map(\.text).joined()
    }

    private mutating func parseData(_ tag: XMLStartTag) throws(PropertyListError) -> [UInt8] {
        let content = try readContent(of: tag)
        var decoder = XMLScalar.Base64Decoder()
        for piece in content.pieces {
            for (index, byte) in piece.text.utf8.enumerated() {
                if let problem = decoder.consume(byte) {
                    throw error(problem, at: piece.offset(ofByteAt: index))
                }
            }
        }
        guard let bytes = decoder.finish() else {
            throw error("base64 data in <data> is incomplete", at: tag.offset)
        }
        return bytes
    }

    // MARK: - Tokens

    /// The character data of an element that may not contain elements; comments and
    /// CDATA sections may split it into pieces.
    private struct LeafContent {
        var pieces: [XMLText] = []

        /// The text without surrounding whitespace, and the offset of its first byte;
        /// `nil` when there is only whitespace.
        func trimmed() -> (value: String, offset: Int)? {
            let whole = pieces.map(\.text).joined()
            let bytes = whole.utf8
            guard let first = bytes.firstIndex(where: { !XMLByte.isWhitespace($0) }),
                let last = bytes.lastIndex(where: { !XMLByte.isWhitespace($0) })
            else { return nil }
            var skipped = bytes.distance(from: bytes.startIndex, to: first)
            var offset = 0
            for piece in pieces {
                let count = piece.text.utf8.count
                if skipped < count {
                    offset = piece.offset(ofByteAt: skipped)
                    break
                }
                skipped -= count
            }
            return (String(decoding: bytes[first...last], as: UTF8.self), offset)
        }
    }

    private mutating func readContent(of tag: XMLStartTag) throws(PropertyListError) -> LeafContent {
        var content = LeafContent()
        guard !tag.isEmpty else { return content }
        while true {
            switch try tokenizer.next() {
            case .text(let text):
                content.pieces.append(text)
            case .endTag(let name, _) where name == tag.name:
                return content
            case .endTag(let name, let offset):
                throw error("expected </\(tag.name)> but found </\(name)>", at: offset)
            case .startTag(let nested):
                throw error("unexpected <\(nested.name)> inside <\(tag.name)>", at: nested.offset)
            case .doctype(let offset):
                throw error("unexpected DOCTYPE declaration inside <\(tag.name)>", at: offset)
            case .endOfInput:
                throw error("unterminated <\(tag.name)> element", at: tag.offset)
            }
        }
    }

    /// The next tag, DOCTYPE or end of input, skipping whitespace between elements.
    private mutating func nextMarkup(allowingDoctype: Bool, textError: String) throws(PropertyListError) -> XMLToken {
        while true {
            let token = try tokenizer.next()
            switch token {
            case .text(let text):
                if let index = text.text.utf8.firstIndex(where: { !XMLByte.isWhitespace($0) }) {
                    let byteIndex = text.text.utf8.distance(from: text.text.utf8.startIndex, to: index)
                    throw error(textError, at: text.offset(ofByteAt: byteIndex))
                }
            case .doctype(let offset):
                guard allowingDoctype else {
                    throw error("a DOCTYPE declaration is only allowed before the root element", at: offset)
                }
            default:
                return token
            }
        }
    }

    private func missingValue(for key: (key: String, location: SourceLocation)) -> PropertyListError {
        PropertyListError("key \"\(key.key)\" has no value", at: key.location)
    }

    private func error(_ reason: String, at offset: Int) -> PropertyListError {
        tokenizer.error(reason, at: offset)
    }
}
