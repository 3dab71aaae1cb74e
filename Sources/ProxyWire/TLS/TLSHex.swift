/// Fixed-width hex spellings for reasons and names. (No Foundation, so no `String(format:)`.)
enum TLSHex {
    /// "0x7f1c": always four digits, so wire values line up in logs.
    static func uint16(_ value: UInt16) -> String {
        "0x" + padded(String(value, radix: 16), to: 4)
    }

    /// "0x16".
    static func uint8(_ value: UInt8) -> String {
        "0x" + padded(String(value, radix: 16), to: 2)
    }

    private static func padded(_ digits: String, to width: Int) -> String {
        String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
