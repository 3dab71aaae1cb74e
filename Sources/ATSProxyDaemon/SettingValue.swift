import ATSPolicy
import EventLoop
import ProxyCore

/// Why a value cannot be used; the caller adds where it came from (``ConfigurationError``).
struct InvalidValue: Error {
    var reason: String
}

/// The rules for each setting's value, one set for the file and the flags alike, so a value means
/// the same wherever it is written.
enum SettingValue {
    static func listenAddress(_ text: String) throws(InvalidValue) -> SocketAddress {
        do { return try SocketAddress(parsing: text) } catch {
            throw InvalidValue(reason: "not ADDR:PORT (for example 127.0.0.1:8080 or [::1]:8080)")
        }
    }

    /// `--wireguard-interface`: a Linux interface name (IFNAMSIZ: at most 15 bytes; no '/', no blank).
    static func interfaceName(_ text: String) throws(InvalidValue) -> String {
        let allowed = text.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
        guard (1...15).contains(text.utf8.count), allowed, text != ".", text != ".." else {
            throw InvalidValue(reason: "not an interface name (1 to 15 letters, digits, '-', '_' or '.')")
        }
        return text
    }

    /// `--web-listen`: ADDR:PORT, or `off`.
    static func webListen(_ text: String) throws(InvalidValue) -> WebListenSetting {
        if text == "off" { return .off }
        do { return .address(try SocketAddress(parsing: text)) } catch {
            throw InvalidValue(reason: "not ADDR:PORT (for example 127.0.0.1:8081 or 0.0.0.0:8081) or off")
        }
    }

    /// `--web-token`: what a client beyond loopback must present. At least 16 characters, printable
    /// ASCII without spaces, so that it fits a URL's query and a header as it is.
    static func webToken(_ text: String) throws(InvalidValue) -> String {
        guard text.count >= 16 else {
            throw InvalidValue(reason: "too short: a token has at least 16 characters (try: openssl rand -hex 16)")
        }
        guard
            text.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) && !"&=#%+".unicodeScalars.contains($0) })
        else {
            throw InvalidValue(
                reason: "only printable ASCII without spaces or any of & = # % + (try: openssl rand -hex 16)")
        }
        return text
    }

    static func clientRange(_ text: String) throws(InvalidValue) -> AddressRange {
        do { return try AddressRange(parsing: text) } catch {
            throw InvalidValue(reason: "\(error) (a CIDR range, for example 192.168.1.0/24)")
        }
    }

    static func destinationRange(_ text: String) throws(InvalidValue) -> AddressRange {
        do { return try AddressRange(parsing: text) } catch {
            throw InvalidValue(reason: "\(error) (a CIDR range, for example 127.0.0.0/8)")
        }
    }

    /// One of an enumeration's raw values, spelt exactly.
    static func choice<Value: CaseIterable & RawRepresentable>(_ text: String, _: Value.Type) throws(InvalidValue)
        -> Value
    where Value.RawValue == String {
        guard let value = Value(rawValue: text) else {
            throw InvalidValue(
                reason: "\"\(text)\" is not one of: \(Value.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return value
    }

    /// A whole number within the key's range.
    static func integer(_ text: String, for key: ConfigKey) throws(InvalidValue) -> Int {
        guard let value = Int(text) else {
            throw InvalidValue(reason: "\"\(text)\" is not a whole number\(unit(of: key).map { " of \($0)" } ?? "")")
        }
        try check(value, for: key)
        return value
    }

    static func check(_ value: Int, for key: ConfigKey) throws(InvalidValue) {
        let range = allowedRange(of: key)
        guard range.contains(value) else {
            throw InvalidValue(
                reason:
                    "must be between \(range.lowerBound) and \(range.upperBound)\(unit(of: key).map { " \($0)" } ?? "")"
            )
        }
    }

    /// The numbers each numeric key accepts (its ``DaemonSetting/Kind/integer(_:unit:)``).
    static func allowedRange(of key: ConfigKey) -> ClosedRange<Int> {
        if case .integer(let range, _) = key.setting.kind { range } else { Int.min...Int.max }
    }

    private static func unit(of key: ConfigKey) -> String? {
        if case .integer(_, let unit) = key.setting.kind { unit } else { nil }
    }
}

extension SettingValue {
    /// A `--passthrough` host pattern: an exact name or `*.suffix`.
    static func hostPattern(_ text: String) throws(InvalidValue) -> HostPattern {
        do { return try HostPattern(parsing: text) } catch {
            throw InvalidValue(reason: "\(error) (for example api.example.com or *.example.com)")
        }
    }
}

/// `web-listen`: the web listener's address, or none.
package enum WebListenSetting: Sendable, Equatable, CustomStringConvertible {
    package static func == (a: WebListenSetting, b: WebListenSetting) -> Bool { a.description == b.description }

    case address(SocketAddress)
    case off

    package var description: String {
        switch self {
        case .address(let address): address.description
        case .off: "off"
        }
    }
}
