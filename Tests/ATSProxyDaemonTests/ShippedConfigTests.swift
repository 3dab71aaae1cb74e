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

    /// The comment block above each key's line, for the key's documentation.
    static func documentation() throws -> [ConfigKey: String] {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: false)
        var blocks: [ConfigKey: String] = [:]
        for key in ConfigKey.allCases {
            guard
                let index = lines.firstIndex(where: {
                    $0.hasPrefix("\(key.name) = ") || $0.hasPrefix("#\(key.name) = ")
                })
            else { continue }
            var comment: [Substring] = []
            var cursor = index - 1
            while cursor >= 0, lines[cursor].hasPrefix("# ") {
                comment.insert(lines[cursor].dropFirst(2), at: 0)
                cursor -= 1
            }
            blocks[key] = comment.joined(separator: " ")
        }
        return blocks
    }

    @Test(
        "every key is there with its meaning, default, repeatability and reload behaviour",
        arguments: ConfigKey.allCases)
    func documented(_ key: ConfigKey) throws {
        let block = try #require(try Self.documentation()[key], "config/atsproxy.conf has no line for \(key.name)")
        #expect(block.contains("Default"), "\(key.name): no default in \"\(block)\"")
        #expect(block.contains("Repeatable") == key.isRepeatable, "\(key.name): \"\(block)\"")
        #expect(block.hasSuffix(key.takesEffectOnReload ? "Reload." : "Restart."), "\(key.name): \"\(block)\"")
    }
}
