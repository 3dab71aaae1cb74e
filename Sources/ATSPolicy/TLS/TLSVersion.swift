/// A TLS protocol version, ordered, with the spellings Info.plist and logs use.
public struct TLSVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The wire value: 0x0300 SSL 3.0, 0x0301 TLS 1.0 … 0x0304 TLS 1.3.
    public let wireValue: UInt16

    public init(wireValue: UInt16) { self.wireValue = wireValue }

    public static let ssl3 = TLSVersion(wireValue: 0x0300)
    public static let tls10 = TLSVersion(wireValue: 0x0301)
    public static let tls11 = TLSVersion(wireValue: 0x0302)
    public static let tls12 = TLSVersion(wireValue: 0x0303)
    public static let tls13 = TLSVersion(wireValue: 0x0304)

    public static func < (lhs: TLSVersion, rhs: TLSVersion) -> Bool { lhs.wireValue < rhs.wireValue }

    /// `TLSv1.2` and so on: the `NSExceptionMinimumTLSVersion` spelling, also used in JSON.
    public var plistName: String {
        switch wireValue {
        case 0x0300: "SSLv3.0"
        case 0x0301: "TLSv1.0"
        case 0x0302: "TLSv1.1"
        case 0x0303: "TLSv1.2"
        case 0x0304: "TLSv1.3"
        default: "0x" + String(wireValue, radix: 16)
        }
    }

    /// `TLS 1.2`: for sentences.
    public var humanName: String {
        switch wireValue {
        case 0x0300: "SSL 3.0"
        case 0x0301...0x0304: "TLS 1.\(wireValue - 0x0301)"
        default: plistName
        }
    }

    public var description: String { plistName }

    /// The versions an ATS exception can name, lowest first.
    public static let exceptionVersions: [TLSVersion] = [.tls10, .tls11, .tls12, .tls13]

    /// Parses the JSON/log spelling (`TLSv1.2`), also accepting `TLS1.2` and `1.2` for CLI input.
    public init?(name: String) {
        switch name {
        case "TLSv1.0", "TLS1.0", "1.0": self = .tls10
        case "TLSv1.1", "TLS1.1", "1.1": self = .tls11
        case "TLSv1.2", "TLS1.2", "1.2": self = .tls12
        case "TLSv1.3", "TLS1.3", "1.3": self = .tls13
        case "SSLv3", "SSLv3.0": self = .ssl3
        default: return nil
        }
    }
}
