import ArgumentParser
import EventLoop
import Foundation
import ProxyCore
import Testing

@testable import ATSProxyDaemon

/// `config/atsproxy.conf`, the file installed as /etc/atsproxy/atsproxy.conf: it parses, it passes
/// the check, and its comments agree with the code.
@Suite("shipped config file")
struct ShippedConfigTests {
    static let path = Repository.path("config/atsproxy.conf")

    @Test("it parses and passes --check-config with the repository's policy")
    func passesCheck() throws {
        let configuration = try DaemonCommand.parse([
            "--config", Self.path, "--policy", Repository.path("config/ats-defaults.plist"),
        ]).resolveConfiguration()
        #expect(configuration.listeners.map(\.address.description) == ["127.0.0.1:8080"])
        #expect(configuration.mode == .enforce)
        #expect(configuration.logFile == nil, "the installed daemon logs to stdout, for the journal")
        let summary = try ConfigurationCheck(configuration).summary()
        #expect(summary.contains("configuration OK"))
    }

    @Test("the installed policy path is absolute, under /etc/atsproxy")
    func installedPolicy() throws {
        let configuration = try DaemonCommand.parse(["--config", Self.path]).resolveConfiguration()
        #expect(configuration.policyFile == "/etc/atsproxy/ats-defaults.plist")
    }

    /// Each key's line (`key = value`, or `#key = value` for one left at its default), with the
    /// comment block above it.
    static func documentation() throws -> [ConfigKey: (comment: String, value: String)] {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: false)
        var blocks: [ConfigKey: (comment: String, value: String)] = [:]
        for key in ConfigKey.allCases {
            let prefixes = ["\(key.name) = ", "#\(key.name) = "]
            guard let index = lines.firstIndex(where: { line in prefixes.contains { line.hasPrefix($0) } }) else {
                continue
            }
            var comment: [Substring] = []
            var cursor = index - 1
            while cursor >= 0, lines[cursor].hasPrefix("# ") {
                comment.insert(lines[cursor].dropFirst(2), at: 0)
                cursor -= 1
            }
            let value = lines[index].split(separator: "=", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces)
            blocks[key] = (comment.joined(separator: " "), value ?? "")
        }
        return blocks
    }

    @Test(
        "every key is there as the table has it: repeatability, reload behaviour, default, range and words",
        arguments: ConfigKey.allCases)
    func documented(_ key: ConfigKey) throws {
        let setting = key.setting
        let (block, value) = try #require(
            try Self.documentation()[key], "config/atsproxy.conf has no line for \(key.name)")
        #expect(block.contains("Default"), "\(key.name): no default in \"\(block)\"")
        #expect(block.contains("Repeatable") == setting.isRepeatable, "\(key.name): \"\(block)\"")
        #expect(
            block.hasSuffix(setting.reload == .applies ? "Reload." : "Restart."),
            "\(key.name) is \(setting.reload.rawValue) in the table: \"\(block)\"")
        // The line shows the default where there is one to write, else the table's example.
        if case .value(let defaultValue) = setting.defaultValue {
            #expect(value == defaultValue, "\(key.name): the line is not the default")
            #expect(block.contains("Default \(defaultValue)"), "\(key.name): \"\(block)\"")
        } else {
            #expect(value == setting.example, "\(key.name): the line is not the table's example")
        }
        switch setting.kind {
        case .integer(let range, _):
            #expect(block.contains("\(range.lowerBound) to \(range.upperBound)"), "\(key.name): \"\(block)\"")
        case .choice(let words):
            for word in words { #expect(block.contains(word), "\(key.name): \(word) is not named: \"\(block)\"") }
        case .path, .text: break
        }
    }

    @Test("every key = value line, commented or not, names a key of the table")
    func noOtherKeys() throws {
        let known = Set(ConfigKey.allCases.map(\.name))
        let lines = try String(contentsOfFile: Self.path, encoding: .utf8).split(separator: "\n")
        for line in lines where !line.hasPrefix("# ") && line.contains(" = ") {
            let key = line.drop { $0 == "#" }.prefix { $0 != " " }
            #expect(known.contains(String(key)), "config/atsproxy.conf names \(key), which is no setting")
        }
    }
}
