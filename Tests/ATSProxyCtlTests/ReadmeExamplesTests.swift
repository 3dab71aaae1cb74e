import ATSProxyCtl
import Foundation
import Testing

/// README's examples are real output: each ```console block that runs `atsproxyctl` must print today
/// exactly what README shows.
@Suite("README examples")
struct ReadmeExamplesTests {
    struct Example: CustomTestStringConvertible, Sendable {
        var command: String
        var expected: String
        var testDescription: String { command }
    }

    static func examples() throws -> [Example] {
        let readme = try String(contentsOfFile: repositoryRoot + "/README.md", encoding: .utf8)
        var examples: [Example] = []
        var lines: [String]? = nil
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line == "```console" {
                lines = []
            } else if line == "```", let block = lines {
                if let first = block.first, first.hasPrefix("$ atsproxyctl ") {
                    examples.append(Example(command: String(first.dropFirst(2)), expected: block.dropFirst().joined(separator: "\n")))
                }
                lines = nil
            } else if lines != nil {
                lines?.append(line)
            }
        }
        return examples
    }

    @Test("README shows at least the check and explain examples")
    func found() throws {
        let commands = try Self.examples().map(\.command)
        #expect(commands.contains { $0.hasPrefix("atsproxyctl check") })
        #expect(commands.contains { $0.hasPrefix("atsproxyctl explain") && $0.contains("--json") })
        #expect(commands.contains { $0.hasPrefix("atsproxyctl report") && $0.contains("--policy") })
    }

    @Test("each example prints what README shows", arguments: try examples())
    func example(_ example: Example) {
        let fixtures = repositoryRoot + "/Tests/ATSProxyCtlTests/Fixtures/"
        let directory = fixtures + "readme/"
        // The examples name files relative to the fixture folder (readme/, or Fixtures itself for
        // `report/…`); run with full paths, then put the short names back so the text compares.
        let arguments = example.command.split(separator: " ").dropFirst().map { word in
            if word.hasSuffix(".plist") && !word.contains("/") { return directory + word }
            var isDirectory: ObjCBool = false
            let isFile = FileManager.default.fileExists(atPath: fixtures + word, isDirectory: &isDirectory) && !isDirectory.boolValue
            return isFile ? fixtures + word : String(word)
        }
        let result = ATSProxyCtl.run(arguments)
        let printed = result.standardOutput.replacingOccurrences(of: directory, with: "")
            .replacingOccurrences(of: fixtures, with: "")
            .trimmingCharacters(in: .newlines)
        #expect(printed == example.expected, "\(result.standardError)")
    }
}
