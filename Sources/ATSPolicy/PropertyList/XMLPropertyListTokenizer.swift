import TextFormats

/// A run of character data: raw text, a CDATA section, or the character that one entity or
/// character reference stands for.
struct XMLText {
    var text: String
    /// Byte offset where the text starts in the file (the `&` for a reference).
    var offset: Int
    /// Whether `text` is the file's own bytes from `offset` on, so that each of its bytes has
    /// its own position; a reference's replacement only has the position of its `&`.
    var isVerbatim: Bool

    func offset(ofByteAt index: Int) -> Int { isVerbatim ? offset + index : offset }
}

struct XMLStartTag {
    var name: String
    /// `<name/>`.
    var isEmpty: Bool
    /// Byte offset of the `<`.
    var offset: Int
}

enum XMLToken {
    case startTag(XMLStartTag)
    case endTag(name: String, offset: Int)
    case text(XMLText)
    /// A `<!DOCTYPE …>` declaration, already skipped; only the parser knows whether it is
    /// allowed where it stands.
    case doctype(offset: Int)
    case endOfInput(offset: Int)

    var offset: Int {
        switch self {
        case .startTag(let tag): tag.offset
        case .endTag(_, let offset), .doctype(let offset), .endOfInput(let offset): offset
        case .text(let text): text.offset
        }
    }
}

/// Splits the plist subset of XML into tags and text.
///
/// Comments and processing instructions are skipped here; references and CDATA sections are
/// decoded into text. Everything else that XML allows but a property list never uses (entity
/// declarations, namespaces, non-UTF-8 encodings) is out of scope: such input is an error
/// or is skipped, never guessed at.
struct XMLTokenizer {
    private let bytes: [UInt8]
    /// Where the document starts: after the byte order mark, if any.
    private let documentStart: Int
    private var position: Int
    private let lines: XMLLineTable

    init(_ bytes: [UInt8], documentStart: Int) throws(PropertyListError) {
        self.bytes = bytes
        self.documentStart = documentStart
        self.position = documentStart
        self.lines = try XMLLineTable(bytes, documentStart: documentStart)
    }

    func location(at offset: Int) -> SourceLocation { lines.location(at: offset) }

    func error(_ reason: String, at offset: Int) -> PropertyListError {
        PropertyListError(reason, at: location(at: offset))
    }

    mutating func next() throws(PropertyListError) -> XMLToken {
        while position < bytes.count {
            let start = position
            switch bytes[position] {
            case UInt8(ascii: "<"):
                if hasPrefix("<!--") {
                    try skipComment()
                } else if hasPrefix("<?") {
                    try skipProcessingInstruction()
                } else if hasPrefix("<![CDATA[") {
                    return .text(try readCDATA())
                } else if hasPrefix("<!DOCTYPE") {
                    try skipDoctype()
                    return .doctype(offset: start)
                } else if hasPrefix("</") {
                    return try readEndTag()
                } else {
                    return .startTag(try readStartTag())
                }
            case UInt8(ascii: "&"):
                return .text(try readReference())
            default:
                return .text(readRawText())
            }
        }
        return .endOfInput(offset: position)
    }

    // MARK: - Markup that carries no data

    private mutating func skipComment() throws(PropertyListError) {
        let start = position
        guard let end = firstOffset(of: "-->", from: position + 4) else {
            throw error("unterminated comment", at: start)
        }
        position = end + 3
    }

    private mutating func skipProcessingInstruction() throws(PropertyListError) {
        let start = position
        position += 2
        let target = readName() ?? ""
        guard let end = firstOffset(of: "?>", from: position) else {
            throw error("unterminated processing instruction", at: start)
        }
        // Strict XML wants the declaration first; whitespace before it is tolerated because
        // CoreFoundation reads such files.
        if target.lowercased() == "xml", !bytes[documentStart..<start].allSatisfy(XMLByte.isWhitespace) {
            throw error("the XML declaration is only allowed at the start of the file", at: start)
        }
        position = end + 2
    }

    /// Skips `<!DOCTYPE plist …>`, including an internal subset in `[…]`, whose quoted
    /// strings and comments may hold `>` and `]`.
    private mutating func skipDoctype() throws(PropertyListError) {
        let start = position
        var index = position + "<!DOCTYPE".utf8.count
        var quote: UInt8?
        var inInternalSubset = false
        while index < bytes.count {
            let byte = bytes[index]
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if inInternalSubset, bytes[index...].starts(with: "<!--".utf8) {
                guard let end = firstOffset(of: "-->", from: index + 4) else { break }
                index = end + 3
                continue
            } else if byte == UInt8(ascii: "[") {
                inInternalSubset = true
            } else if byte == UInt8(ascii: "]") {
                inInternalSubset = false
            } else if byte == UInt8(ascii: ">"), !inInternalSubset {
                position = index + 1
                return
            }
            index += 1
        }
        throw error("unterminated DOCTYPE declaration", at: start)
    }

    // MARK: - Tags

    private mutating func readStartTag() throws(PropertyListError) -> XMLStartTag {
        let start = position
        position += 1
        guard let name = readName() else {
            throw error("expected an element name after '<'", at: position)
        }
        while true {
            let hadWhitespace = skipWhitespace()
            guard position < bytes.count else { throw error("unterminated <\(name)> tag", at: start) }
            switch bytes[position] {
            case UInt8(ascii: ">"):
                position += 1
                return XMLStartTag(name: name, isEmpty: false, offset: start)
            case UInt8(ascii: "/"):
                guard position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: ">") else {
                    throw error("expected '>' after '/' in <\(name)> tag", at: position + 1)
                }
                position += 2
                return XMLStartTag(name: name, isEmpty: true, offset: start)
            default:
                // Attributes (only `version` on <plist> in practice) are checked for syntax
                // and otherwise ignored, as CoreFoundation does.
                guard hadWhitespace else {
                    throw error("unexpected character in <\(name)> tag", at: position)
                }
                try skipAttribute(in: name, tagStart: start)
            }
        }
    }

    private mutating func skipAttribute(in element: String, tagStart: Int) throws(PropertyListError) {
        guard readName() != nil else {
            throw error("unexpected character in <\(element)> tag", at: position)
        }
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: "=") else {
            throw error("expected '=' after attribute name in <\(element)> tag", at: position)
        }
        position += 1
        skipWhitespace()
        guard position < bytes.count,
            bytes[position] == UInt8(ascii: "\"") || bytes[position] == UInt8(ascii: "'")
        else {
            throw error("expected a quoted attribute value in <\(element)> tag", at: position)
        }
        let quote = bytes[position]
        position += 1
        while position < bytes.count, bytes[position] != quote {
            if bytes[position] == UInt8(ascii: "<") {
                throw error("'<' is not allowed in an attribute value", at: position)
            }
            position += 1
        }
        guard position < bytes.count else { throw error("unterminated <\(element)> tag", at: tagStart) }
        position += 1
    }

    private mutating func readEndTag() throws(PropertyListError) -> XMLToken {
        let start = position
        position += 2
        guard let name = readName() else {
            throw error("expected an element name after '</'", at: position)
        }
        skipWhitespace()
        guard position < bytes.count else { throw error("unterminated </\(name)> tag", at: start) }
        guard bytes[position] == UInt8(ascii: ">") else {
            throw error("expected '>' to close </\(name)>", at: position)
        }
        position += 1
        return .endTag(name: name, offset: start)
    }

    /// Reads an XML name; `nil`, without moving, when none starts here.
    private mutating func readName() -> String? {
        let start = position
        guard position < bytes.count, XMLByte.isNameStart(bytes[position]) else { return nil }
        position += 1
        while position < bytes.count, XMLByte.isNameContinuation(bytes[position]) {
            position += 1
        }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    // MARK: - Character data

    private mutating func readRawText() -> XMLText {
        let start = position
        while position < bytes.count, bytes[position] != UInt8(ascii: "<"), bytes[position] != UInt8(ascii: "&") {
            position += 1
        }
        return XMLText(text: String(decoding: bytes[start..<position], as: UTF8.self), offset: start, isVerbatim: true)
    }

    private mutating func readCDATA() throws(PropertyListError) -> XMLText {
        let start = position
        let contentStart = position + "<![CDATA[".utf8.count
        guard let end = firstOffset(of: "]]>", from: contentStart) else {
            throw error("unterminated CDATA section", at: start)
        }
        position = end + 3
        let text = String(decoding: bytes[contentStart..<end], as: UTF8.self)
        return XMLText(text: text, offset: contentStart, isVerbatim: true)
    }

    /// Decodes `&lt;`, `&gt;`, `&amp;`, `&quot;`, `&apos;`, `&#65;` or `&#x41;`.
    private mutating func readReference() throws(PropertyListError) -> XMLText {
        let start = position
        position += 1
        let scalar: Unicode.Scalar
        if position < bytes.count, bytes[position] == UInt8(ascii: "#") {
            scalar = try readCharacterReference(start: start)
        } else {
            let name = readName() ?? ""
            guard position < bytes.count, bytes[position] == UInt8(ascii: ";") else {
                throw error("unterminated entity reference", at: start)
            }
            switch name {
            case "lt": scalar = "<"
            case "gt": scalar = ">"
            case "amp": scalar = "&"
            case "quot": scalar = "\""
            case "apos": scalar = "'"
            default: throw error("unknown entity &\(name);", at: start)
            }
        }
        position += 1  // the ';'
        return XMLText(text: String(Character(scalar)), offset: start, isVerbatim: false)
    }

    /// Reads the digits of `&#…;` up to, not past, the `;`.
    private mutating func readCharacterReference(start: Int) throws(PropertyListError) -> Unicode.Scalar {
        position += 1  // the '#'
        var radix: UInt32 = 10
        if position < bytes.count, bytes[position] == UInt8(ascii: "x") {
            radix = 16
            position += 1
        }
        let digitsStart = position
        var value: UInt32 = 0
        while position < bytes.count, let digit = XMLByte.digitValue(bytes[position], radix: radix) {
            // Saturate instead of overflowing; anything past U+10FFFF is rejected below anyway.
            value = min(value * radix + digit, 0x110000)
            position += 1
        }
        guard position < bytes.count, bytes[position] == UInt8(ascii: ";"), position > digitsStart else {
            throw error("invalid character reference", at: start)
        }
        guard value != 0, let scalar = Unicode.Scalar(value) else {
            let text = String(decoding: bytes[start...position], as: UTF8.self)
            throw error("character reference \(text) is not a valid character", at: start)
        }
        return scalar
    }

    // MARK: - Scanning helpers

    private func hasPrefix(_ prefix: String) -> Bool {
        bytes[position...].starts(with: prefix.utf8)
    }

    private func firstOffset(of terminator: String, from offset: Int) -> Int? {
        var index = offset
        while index < bytes.count {
            if bytes[index...].starts(with: terminator.utf8) { return index }
            index += 1
        }
        return nil
    }

    @discardableResult
    private mutating func skipWhitespace() -> Bool {
        let start = position
        while position < bytes.count, XMLByte.isWhitespace(bytes[position]) { position += 1 }
        return position > start
    }
}

/// Byte classes of the XML subset, on UTF-8 bytes.
enum XMLByte {
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
            || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
    }

    /// Letters, `_`, `:` and every non-ASCII byte (names may be any Unicode letters; the plist
    /// vocabulary is ASCII, so an exotic name just ends up as an unknown element).
    static func isNameStart(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte >= 0x80
    }

    static func isNameContinuation(_ byte: UInt8) -> Bool {
        isNameStart(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }

    /// The value of an ASCII digit in base 10 or 16, `nil` for anything else.
    static func digitValue(_ byte: UInt8, radix: UInt32) -> UInt32? {
        let value: UInt32
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): value = UInt32(byte - UInt8(ascii: "a")) + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): value = UInt32(byte - UInt8(ascii: "A")) + 10
        default: return nil
        }
        return value < radix ? value : nil
    }
}

/// Validates UTF-8 and maps byte offsets to 1-based lines and columns.
///
/// Columns count Unicode scalars, as editors count characters, not bytes. A line ends at
/// `\n`, `\r\n` or a lone `\r`.
struct XMLLineTable {
    private let bytes: [UInt8]
    /// Byte offset where each line starts; line 1 starts after the byte order mark.
    private var lineStarts: [Int]
    /// Characters (non-continuation bytes) before each block of ``blockSize`` bytes, so a column
    /// costs at most one block's scan however long its line is: a whole plist on one line must not
    /// make every location a scan from the start of the line.
    private var charactersBeforeBlock: [Int]
    private static let blockShift = 6
    private static let blockSize = 1 << blockShift

    init(_ bytes: [UInt8], documentStart: Int) throws(PropertyListError) {
        self.bytes = bytes
        self.lineStarts = [documentStart]
        var counts: [Int] = []
        counts.reserveCapacity(bytes.count / XMLLineTable.blockSize + 1)
        var characters = 0
        for (index, byte) in bytes.enumerated() {
            if index & (XMLLineTable.blockSize - 1) == 0 { counts.append(characters) }
            if byte & 0xC0 != 0x80 { characters += 1 }
        }
        counts.append(characters)
        self.charactersBeforeBlock = counts
        var iterator = bytes[documentStart...].makeIterator()
        var decoder = UTF8()
        var offset = documentStart
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                offset += UTF8.width(scalar)
                let isCRLF = scalar == "\r" && offset < bytes.count && bytes[offset] == UInt8(ascii: "\n")
                if scalar == "\n" || (scalar == "\r" && !isCRLF) {
                    lineStarts.append(offset)
                }
            case .emptyInput:
                return
            case .error:
                // Valid scalars before it were counted exactly, so `offset` is where the bad
                // sequence starts.
                throw PropertyListError("invalid UTF-8 byte sequence", at: location(at: offset))
            }
        }
    }

    func location(at offset: Int) -> SourceLocation {
        // The last line starting at or before `offset`.
        var low = 0
        var high = lineStarts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if lineStarts[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        let lineStart = lineStarts[low]
        let end = min(max(offset, lineStart), bytes.count)
        return SourceLocation(line: low + 1, column: characters(before: end) - characters(before: lineStart) + 1)
    }

    /// Characters in `bytes[0..<offset]`; UTF-8 continuation bytes (10xxxxxx) do not start one.
    private func characters(before offset: Int) -> Int {
        let block = offset >> XMLLineTable.blockShift
        let blockStart = block << XMLLineTable.blockShift
        return charactersBeforeBlock[block]
            + bytes[blockStart..<offset].reduce(0) { count, byte in byte & 0xC0 == 0x80 ? count : count + 1 }
    }
}
