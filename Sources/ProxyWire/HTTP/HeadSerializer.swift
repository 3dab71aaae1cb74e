/// Writes a message head in wire form: start line, field lines, empty line, all ending in CRLF.
///
/// Heads are written from parsed values, which are always clean; fields the proxy itself added
/// could hold anything, so the writer refuses to emit a field line that would break the head:
/// a field whose name is not a token is skipped, and CR, LF, NUL and other control characters
/// in a value become SP (RFC 9110 §5.5 allows that replacement).
enum HeadSerializer {
    static func serialize(startLine: String, headers: HTTPHeaders) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256 + headers.fields.reduce(0) { $0 + $1.name.utf8.count + $1.valueBytes.count + 4 })
        appendLine(sanitized(Array(startLine.utf8)), to: &bytes)
        for field in headers.fields where HTTPSyntax.isToken(field.name) {
            bytes.append(contentsOf: field.name.utf8)
            bytes.append(contentsOf: [HTTPSyntax.colon, HTTPSyntax.space])
            appendLine(sanitized(field.valueBytes), to: &bytes)
        }
        bytes.append(contentsOf: [HTTPSyntax.carriageReturn, HTTPSyntax.lineFeed])
        return bytes
    }

    private static func appendLine(_ line: [UInt8], to bytes: inout [UInt8]) {
        bytes.append(contentsOf: line)
        bytes.append(contentsOf: [HTTPSyntax.carriageReturn, HTTPSyntax.lineFeed])
    }

    private static func sanitized(_ bytes: [UInt8]) -> [UInt8] {
        bytes.map { HTTPSyntax.isFieldValueCharacter($0) ? $0 : HTTPSyntax.space }
    }
}
