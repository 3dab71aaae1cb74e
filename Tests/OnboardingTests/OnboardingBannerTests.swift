import Foundation
import Onboarding
import TLSTestSupport
import Testing

/// The terminal banner: its QR codes, read back from the text itself, decode to the onboarding URLs.
@Suite("Onboarding banner", .startsProcesses(timeLimit: .seconds(60)))
struct OnboardingBannerTests {
    /// The banner's half-block drawings turned back into an image (light modules drawn, as the
    /// terminal shows them) and read by zbarimg, one per drawing.
    static func decodeDrawings(_ text: String) throws -> [String] {
        var drawings: [[Substring]] = [[]]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.contains("█") || line.contains("▀") || line.contains("▄") {
                drawings[drawings.count - 1].append(line)
            } else if !drawings[drawings.count - 1].isEmpty {
                drawings.append([])
            }
        }
        return try drawings.filter { !$0.isEmpty }.map(decode)
    }

    static func decode(_ lines: [Substring]) throws -> String {
        let scale = 4
        let width = lines[0].count
        var rows: [[Bool]] = []  // true for light
        for line in lines {
            var upper: [Bool] = []
            var lower: [Bool] = []
            for character in line {
                upper.append(character == "█" || character == "▀")
                lower.append(character == "█" || character == "▄")
            }
            rows += [upper, lower]
        }
        var image = Array("P5\n\(width * scale) \(rows.count * scale)\n255\n".utf8)
        for row in rows {
            for _ in 0..<scale { for light in row { image += Array(repeating: light ? 255 : 0, count: scale) } }
        }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("banner-\(UUID().uuidString).pgm").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(image).write(to: URL(fileURLWithPath: path))
        let result = try runCommand("/usr/bin/zbarimg", ["--quiet", "--raw", path], input: Data(), timeLimit: 20)
        #expect(result.status == 0, "\(result.standardError)")
        return result.standardOutput.trimmingCharacters(in: .newlines)
    }

    @Test("each address's code decodes to its URL, which follows it as text")
    func codes() throws {
        let banner = OnboardingBanner(addresses: ["192.168.1.20:8080", "127.0.0.1:8080", "[fd00::20]:8080"])
        #expect(banner.urls == ["http://192.168.1.20:8080/", "http://[fd00::20]:8080/"])
        let text = banner.text
        #expect(try Self.decodeDrawings(text) == banner.urls)
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("Onboarding: on the iPhone, scan a code") == true)
        #expect(lines.filter { $0.hasPrefix("http://") } == banner.urls)
        #expect(text.hasSuffix("http://[fd00::20]:8080/\n"))
    }

    @Test(
        "with no address a phone can reach, how to listen on the LAN",
        arguments: [[], ["127.0.0.1:8080", "[::1]:8080", "localhost:8080"]])
    func loopbackOnly(_ addresses: [String]) {
        let text = OnboardingBanner(addresses: addresses).text
        #expect(text.contains("--listen 0.0.0.0:8080 --allow-client 192.168.0.0/16"))
        #expect(text.contains("`listen` and `allow-client`"))
        #expect(!text.contains("█"))
    }

    @Test("built from a configuration, it shows the same addresses")
    func fromConfiguration() {
        let banner = OnboardingBanner(configuration: Fixture.configuration(addresses: ["10.0.0.2:8080"]))
        #expect(banner.urls == ["http://10.0.0.2:8080/"])
    }
}
