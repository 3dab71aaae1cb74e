import Foundation
import Onboarding
import TLSTestSupport
import Testing

/// QR codes of onboarding URLs: decoded by a real reader (zbarimg), drawn for a terminal exactly as
/// libqrencode's own command draws them, and as SVG.
@Suite("QR codes", .startsProcesses(timeLimit: .seconds(60)))
struct QRCodeTests {
    static let texts = [
        "http://192.168.1.20:8080/",
        "https://atsproxy.invalid/ca?fingerprint=90:27:E8:56",
        "http://[fd00::20]:8080/proxy.pac?hosts=*.example.com",
    ]

    @Test("a reader decodes the code back to the text", arguments: texts)
    func decodes(_ text: String) throws {
        let code = try QRCode(text)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("qr-\(UUID().uuidString).pgm").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(code.pgm()).write(to: URL(fileURLWithPath: path))
        let decoded = try runCommand("/usr/bin/zbarimg", ["--quiet", "--raw", path], input: Data(), timeLimit: 20)
        #expect(decoded.status == 0, "\(decoded.standardError)")
        #expect(decoded.standardOutput == text + "\n")
    }

    @Test("the terminal drawing is the one libqrencode's own command prints", arguments: texts)
    func terminalMatchesQrencode(_ text: String) throws {
        let reference = try runCommand(
            "/usr/bin/qrencode", ["-t", "UTF8", "-8", "-l", "M", "-m", "4", text], input: Data(), timeLimit: 20)
        #expect(reference.status == 0, "\(reference.standardError)")
        #expect(try QRCode(text).terminalText == reference.standardOutput)
    }

    @Test("the SVG draws the same modules on a white square with the quiet zone")
    func svg() throws {
        let code = try QRCode(Self.texts[0])
        #expect(code.size == 25, "a 25-character URL at level M needs version 2")
        let svg = code.svg(modulePixels: 6)
        let side = (code.size + 2 * QRCode.quietZone) * 6
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(side)\" height=\"\(side)\""))
        // The top-left finder pattern's first row is 7 dark modules in one run.
        #expect(svg.contains("M24 24h42v6h-42z"), "\(svg.prefix(300))")
    }

    @Test("text too long for any QR code is refused, in words")
    func tooLong() {
        #expect(throws: QRCode.EncodeError.self) { try QRCode(String(repeating: "x", count: 4000)) }
    }
}
