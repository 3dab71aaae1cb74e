import TextFormats

/// Writes property lists as Apple's XML format, tab-indented as Xcode writes Info.plist files, so a
/// suggested `NSAppTransportSecurity` can be pasted into an app's Info.plist as it is.
public enum PropertyListWriter {
    /// A whole document: the XML declaration, the DOCTYPE and `<plist version="1.0">`.
    public static func document(_ value: PropertyListValue) -> String {
        var text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">

            """
        write(value, depth: 0, into: &text)
        text += "</plist>\n"
        return text
    }

    /// `<key>key</key>` and the value, each line indented `depth` tabs: a fragment for the inside of
    /// an existing `<dict>`, such as an Info.plist's top level.
    public static func fragment(key: String, value: PropertyListValue, depth: Int = 0) -> String {
        var text = indentation(depth) + "<key>" + escaped(key) + "</key>\n"
        write(value, depth: depth, into: &text)
        return text
    }

    private static func write(_ value: PropertyListValue, depth: Int, into text: inout String) {
        let pad = indentation(depth)
        switch value {
        case .bool(let flag): text += pad + (flag ? "<true/>" : "<false/>") + "\n"
        case .integer(let number): text += pad + "<integer>\(number)</integer>\n"
        case .unsignedInteger(let number): text += pad + "<integer>\(number)</integer>\n"
        case .real(let number): text += pad + "<real>\(number)</real>\n"
        case .string(let string): text += pad + "<string>" + escaped(string) + "</string>\n"
        case .data(let bytes): text += pad + "<data>" + Base64.encode(bytes) + "</data>\n"
        case .date(let seconds): text += pad + "<date>" + DateFormat.rfc3339(Int64(seconds)) + "</date>\n"
        case .uid(let number): text += pad + "<integer>\(number)</integer>\n"
        case .array(let items):
            guard !items.isEmpty else {
                text += pad + "<array/>\n"
                return
            }
            text += pad + "<array>\n"
            for item in items { write(item.value, depth: depth + 1, into: &text) }
            text += pad + "</array>\n"
        case .dictionary(let entries):
            guard !entries.isEmpty else {
                text += pad + "<dict/>\n"
                return
            }
            text += pad + "<dict>\n"
            for entry in entries { text += fragment(key: entry.key, value: entry.value.value, depth: depth + 1) }
            text += pad + "</dict>\n"
        }
    }

    private static func indentation(_ depth: Int) -> String { String(repeating: "\t", count: depth) }

    private static func escaped(_ text: String) -> String { ElementText.escaped(text) }
}

/// Text made safe inside an XML or HTML element.
public enum ElementText {
    /// The three characters element text cannot hold as they are (`>` is escaped too, as Apple's
    /// plist writer does).
    public static func escaped(_ text: String) -> String {
        guard text.contains(where: { $0 == "&" || $0 == "<" || $0 == ">" }) else { return text }
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            default: result.append(character)
            }
        }
        return result
    }
}

extension PropertyListValue {
    /// A dictionary from ordered entries.
    public static func dictionary(ordered pairs: [(String, PropertyListValue)]) -> PropertyListValue {
        .dictionary(pairs.map { PropertyListEntry(key: $0.0, value: PropertyListNode($0.1)) })
    }
}
