/// A WireGuard device's name (`atsproxyctl wireguard add-device NAME`): the file it is kept in,
/// the tunnel's name on the phone, and the `device` of its lines.
package enum WireGuardDeviceName {
    /// The rule, as errors state it.
    package static let rule = "1 to 32 letters, digits, '.', '_' or '-', not starting with '.' or '-'"

    package static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...32).contains(bytes.count), bytes[0] != UInt8(ascii: "."), bytes[0] != UInt8(ascii: "-") else {
            return false
        }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                true
            default: false
            }
        }
    }
}
