import ATSProxyCtl
import Foundation
import Testing

/// The documents' examples are real output: each ```console block of README.md or docs/*.md that runs
/// `atsproxyctl` must print today exactly what the document shows.
@Suite("README and docs/ examples")
struct ReadmeExamplesTests {
    struct Example: CustomTestStringConvertible, Sendable {
        var document: String
        var command: String
        var expected: String
        var testDescription: String { "\(document): \(command)" }
    }

    /// README.md and every Markdown file in docs/, relative to the repository.
    static func documents() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot + "/docs")
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        return ["README.md"] + docs
    }

    static func examples() throws -> [Example] {
        try documents().flatMap { try examples(in: $0) }
    }

    static func examples(in document: String) throws -> [Example] {
        let text = try String(contentsOfFile: repositoryRoot + "/" + document, encoding: .utf8)
        var examples: [Example] = []
        var lines: [String]? = nil
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line == "```console" {
                lines = []
            } else if line == "```", let block = lines {
                if let first = block.first, first.hasPrefix("$ atsproxyctl ") {
                    examples.append(
                        Example(
                            document: document, command: String(first.dropFirst(2)),
                            expected: block.dropFirst().joined(separator: "\n")))
                }
                lines = nil
            } else if lines != nil {
                lines?.append(line)
            }
        }
        return examples
    }

    @Test("the documents show at least the check, explain and report examples")
    func found() throws {
        let commands = try Self.examples().map(\.command)
        #expect(commands.contains { $0.hasPrefix("atsproxyctl check") })
        #expect(commands.contains { $0.hasPrefix("atsproxyctl explain") && $0.contains("--json") })
        #expect(commands.contains { $0.hasPrefix("atsproxyctl report") && $0.contains("--policy") })
    }

    @Test("each example prints what its document shows", arguments: try examples())
    func example(_ example: Example) {
        let fixtures = repositoryRoot + "/Tests/ATSProxyCtlTests/Fixtures/"
        let directory = fixtures + "readme/"
        // The examples name files relative to the fixture folder (readme/, or Fixtures itself for
        // `report/…`); run with full paths, then put the short names back so the text compares.
        let arguments = example.command.split(separator: " ").dropFirst().map { word in
            if word.hasSuffix(".plist") && !word.contains("/") { return directory + word }
            var isDirectory: ObjCBool = false
            let isFile =
                FileManager.default.fileExists(atPath: fixtures + word, isDirectory: &isDirectory)
                && !isDirectory.boolValue
            return isFile ? fixtures + word : String(word)
        }
        let result = ATSProxyCtl.run(arguments)
        let printed = result.standardOutput.replacingOccurrences(of: directory, with: "")
            .replacingOccurrences(of: fixtures, with: "")
            .trimmingCharacters(in: .newlines)
        #expect(printed == example.expected, "\(result.standardError)")
    }
}
