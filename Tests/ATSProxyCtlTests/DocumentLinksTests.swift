import Foundation
import Testing

/// Every relative link in README.md and docs/*.md names a file of the repository, and a link with a
/// `#fragment` into a Markdown file names one of its headings (as GitHub makes anchors of them).
/// Links with a scheme (`https:`, `mailto:`) are not followed.
@Suite("README and docs/ links")
struct DocumentLinksTests {
    struct Link: CustomTestStringConvertible, Sendable {
        var document: String
        var line: Int
        var target: String
        var testDescription: String { "\(document):\(line): \(target)" }
    }

    /// The `](target)` links outside code blocks and code spans.
    static func links(in document: String) throws -> [Link] {
        let text = try String(contentsOfFile: repositoryRoot + "/" + document, encoding: .utf8)
        var links: [Link] = []
        var inCodeBlock = false
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.hasPrefix("```") {
                inCodeBlock.toggle()
                continue
            }
            if inCodeBlock { continue }
            // Code spans hold text, not links: drop them first.
            let prose = line.split(separator: "`", omittingEmptySubsequences: false).enumerated()
                .filter { $0.offset % 2 == 0 }.map(\.element).joined(separator: " ")
            var rest = Substring(prose)
            while let open = rest.range(of: "](") {
                let after = rest[open.upperBound...]
                guard let close = after.firstIndex(of: ")") else { break }
                let target = String(after[..<close])
                if !target.contains(":") {
                    links.append(Link(document: document, line: index + 1, target: target))
                }
                rest = after[close...]
            }
        }
        return links
    }

    static func allLinks() throws -> [Link] {
        try ReadmeExamplesTests.documents().flatMap { try links(in: $0) }
    }

    /// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped,
    /// spaces made `-`; a repeated anchor gets `-1`, `-2`…
    static func anchors(ofMarkdown path: String) throws -> Set<String> {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var anchors: Set<String> = []
        var seen: [String: Int] = [:]
        var inCodeBlock = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { inCodeBlock.toggle() }
            guard !inCodeBlock, line.hasPrefix("#") else { continue }
            let title = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)
            var slug = ""
            for character in title.lowercased() {
                if character.isLetter || character.isNumber || character == "-" || character == "_" {
                    slug.append(character)
                } else if character == " " {
                    slug.append("-")
                }
            }
            let count = seen[slug, default: 0]
            seen[slug] = count + 1
            anchors.insert(count == 0 ? slug : "\(slug)-\(count)")
        }
        return anchors
    }

    @Test("the documents have links to check")
    func found() throws {
        let links = try Self.allLinks()
        #expect(links.contains { $0.document == "README.md" && $0.target.hasPrefix("docs/") })
        #expect(links.contains { $0.target.contains("#") })
    }

    @Test("each relative link names a file that exists, and a heading it has", arguments: try allLinks())
    func resolves(_ link: Link) throws {
        let directory = (link.document as NSString).deletingLastPathComponent
        let parts = link.target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let file = String(parts[0])
        let path =
            file.isEmpty
            ? repositoryRoot + "/" + link.document
            : ((repositoryRoot + "/" + directory + "/" + file) as NSString).standardizingPath
        #expect(path.hasPrefix(repositoryRoot + "/"), "\(link.target) leaves the repository")
        #expect(FileManager.default.fileExists(atPath: path), "\(link.document):\(link.line): no file \(path)")
        if parts.count == 2, path.hasSuffix(".md"), FileManager.default.fileExists(atPath: path) {
            let fragment = String(parts[1])
            #expect(
                try Self.anchors(ofMarkdown: path).contains(fragment),
                "\(link.document):\(link.line): no heading #\(fragment) in \(file.isEmpty ? link.document : file)")
        }
    }
}
