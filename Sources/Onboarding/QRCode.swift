internal import CQREncode
import Glibc

/// A QR code for a short text (the onboarding URL), made by libqrencode, and drawn for a terminal or
/// a web page. A value: the modules are copied out of libqrencode's object, which is freed at once.
package struct QRCode: Sendable, Equatable {
    /// Modules per side (21 for version 1, 4 more per version).
    package let size: Int
    /// Row by row, true for a dark module.
    package let modules: [Bool]

    package enum EncodeError: Error, Equatable, CustomStringConvertible {
        /// libqrencode refused the text (too long for a QR code at this correction level, or no memory).
        case refused(text: String, errno: Int32)

        package var description: String {
            switch self {
            case .refused(let text, let code): "no QR code for \"\(text.prefix(60))\" (errno \(code))"
            }
        }
    }

    /// The quiet zone a scanner needs around the code, in modules (ISO/IEC 18004 asks for 4).
    package static let quietZone = 4

    /// Encodes `text` as bytes (8-bit mode, so a URL keeps its case), error correction M (15%),
    /// the smallest version that holds it.
    package init(_ text: String) throws(EncodeError) {
        guard let code = QRcode_encodeString8bit(text, 0, QR_ECLEVEL_M) else {
            throw .refused(text: text, errno: errno)
        }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        // Bit 0 of each byte is the module's colour; the other bits describe how it was made.
        let data = UnsafeBufferPointer(start: code.pointee.data, count: width * width)
        size = width
        modules = data.map { $0 & 1 == 1 }
    }

    /// Whether the module at `row`, `column` is dark; outside the code (the quiet zone), light.
    package func isDark(row: Int, column: Int) -> Bool {
        guard (0..<size).contains(row), (0..<size).contains(column) else { return false }
        return modules[row * size + column]
    }
}
