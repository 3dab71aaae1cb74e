/// The bytes a head scanner takes at its current position without deciding anything: it only
/// checks their class and stores them. Most of a head is runs of such bytes (a method, a
/// target, field names and values), and the scanner takes a whole run in one tight loop and one
/// copy instead of byte by byte.
///
/// A run never includes a byte that would change the scanner's state or fail (SP ending a
/// method, CR, LF, the colon), so taking it at once and taking it a byte at a time end the same.
enum HTTPPlainBytes {
    /// tchar: a method or a field name.
    case token
    /// VCHAR: a request target.
    case visible
    /// field-vchar, SP, HTAB or obs-text, once a value has started: a field value or a reason phrase.
    case fieldValue

    func contains(_ byte: UInt8) -> Bool {
        switch self {
        case .token: HTTPSyntax.isTokenCharacter(byte)
        case .visible: HTTPSyntax.isVisible(byte)
        case .fieldValue: HTTPSyntax.isFieldValueCharacter(byte)
        }
    }
}
