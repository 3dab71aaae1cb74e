/// The name of a field or container in a hello, for parse errors ("server_name extension (0)
/// extension_data").
///
/// The text is composed only when an error message needs it: a hello is parsed once per tunnel,
/// and building "<extension> extension_data" for each of its dozen extensions cost more than the
/// rest of the parse.
struct TLSFieldName: ExpressibleByStringLiteral, CustomStringConvertible {
    // No case holds a String: a trivial type is copied without reference counting, and a name
    // is copied into every reader made for a vector, a dozen times per hello.
    private enum Storage {
        case literal(StaticString)
        /// An extension's `extension_data` vector, read from the extensions block.
        case extensionData(type: UInt16)
        /// The contents of an extension, read by its decoder.
        case extensionContents(type: UInt16)
    }

    private let storage: Storage

    init(stringLiteral value: StaticString) { storage = .literal(value) }

    static func extensionData(_ type: UInt16) -> TLSFieldName { TLSFieldName(storage: .extensionData(type: type)) }
    static func extensionContents(_ type: UInt16) -> TLSFieldName {
        TLSFieldName(storage: .extensionContents(type: type))
    }

    private init(storage: Storage) { self.storage = storage }

    var description: String {
        switch storage {
        case .literal(let text): text.description
        case .extensionData(let type): "\(TLSRegistryNames.extensionType(type)) extension (\(type)) extension_data"
        case .extensionContents(let type): "\(TLSRegistryNames.extensionType(type)) extension"
        }
    }
}
