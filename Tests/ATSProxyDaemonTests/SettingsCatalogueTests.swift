import ArgumentParser
import Foundation
import Testing

@testable import ATSProxyDaemon

/// The table of settings (``DaemonSetting``) against what ArgumentParser declares, what the parser
/// accepts and what a reload may change: a key, a rule or a reload behaviour that drifts from the
/// table fails here.
@Suite("settings table")
struct SettingsCatalogueTests {
    /// The options `atsproxy` declares, as ArgumentParser describes them (`--experimental-dump-help`),
    /// by long name.
    static func declaredOptions() throws -> [String: [String: Any]] {
        let dump = try #require(DaemonCommand._dumpHelp().data(using: .utf8))
        let tool = try #require(try JSONSerialization.jsonObject(with: dump) as? [String: Any])
        let command = try #require(tool["command"] as? [String: Any])
        let arguments = try #require(command["arguments"] as? [[String: Any]])
        var options: [String: [String: Any]] = [:]
        for argument in arguments where argument["kind"] as? String == "option" {
            let names = (argument["names"] as? [[String: Any]]) ?? []
            for name in names where name["kind"] as? String == "long" {
                options[try #require(name["name"] as? String)] = argument
            }
        }
        return options
    }

    @Test("the options declared are the table's keys, and --config")
    func optionsAreTheKeys() throws {
        let declared = Set(try Self.declaredOptions().keys)
        #expect(declared == Set(ConfigKey.allCases.map(\.name) + ["config"]))
    }

    @Test("each flag has the table's value name, help, repeatability and choices", arguments: ConfigKey.allCases)
    func flagMatchesTable(_ key: ConfigKey) throws {
        let setting = key.setting
        let option = try #require(try Self.declaredOptions()[key.name], "no flag \(key.flag)")
        #expect(option["valueName"] as? String == setting.valueName)
        #expect(option["abstract"] as? String == setting.helpText)
        #expect((option["discussion"] as? String ?? "") == setting.discussion)
        #expect(option["isRepeating"] as? Bool == setting.isRepeatable)
        if !setting.choices.isEmpty {
            #expect(option["allValues"] as? [String] == setting.choices, "the flag's type has other values")
        }
    }

    /// The defaults, with the thread count pinned below any example's: the default is the number of
    /// cores, which the example could happen to be.
    static func defaults() throws -> DaemonConfiguration {
        try DaemonCommand.parse(["--threads", "1"]).resolveConfiguration()
    }

    /// `key = example` in a file of its own.
    static func fromFile(_ key: ConfigKey, _ value: String, in fixture: ConfigFixture) throws -> DaemonConfiguration {
        let path = try fixture.write("atsproxy.conf", "\(key.name) = \(value)\n")
        return try DaemonCommand.parse(["--config", path]).resolveConfiguration()
    }

    @Test(
        "each setting's example is accepted from the flag and the file alike, and is not the default",
        arguments: ConfigKey.allCases)
    func exampleIsAccepted(_ key: ConfigKey) throws {
        let example = key.setting.example
        let defaults = try Self.defaults()
        let fromFlag = try DaemonCommand.parse([key.flag, example]).resolveConfiguration()
        let fromFile = try Self.fromFile(key, example, in: ConfigFixture())
        #expect(fromFlag.differs(from: defaults, in: key), "\(key.flag) \(example) is the default")
        for other in ConfigKey.allCases {
            #expect(
                !fromFile.differs(from: fromFlag, in: other), "\(key.name): the file and the flag differ in \(other)")
        }
        #expect(key.setting.defaultValue != .value(example))
    }

    @Test(
        "a reload applies a changed setting the table says it may change, and keeps the running value of the others",
        arguments: ConfigKey.allCases)
    func reloadFollowsTable(_ key: ConfigKey) throws {
        let running = try Self.defaults()
        var next = try DaemonCommand.parse([key.flag, key.setting.example]).resolveConfiguration()
        next.keepRestartOnlySettings(of: running)
        #expect(
            next.differs(from: running, in: key) == (key.setting.reload == .applies),
            "\(key.name) is \(key.setting.reload.rawValue) in the table")
    }

    static let integerKeys = ConfigKey.allCases.filter {
        if case .integer = $0.setting.kind { true } else { false }
    }

    @Test(
        "a number is accepted at the table's bounds and refused past them, naming the file, line and key",
        arguments: integerKeys)
    func integerBounds(_ key: ConfigKey) throws {
        guard case .integer(let range, let unit) = key.setting.kind else { return }
        let fixture = try ConfigFixture()
        for value in [range.lowerBound, range.upperBound] {
            _ = try Self.fromFile(key, "\(value)", in: fixture)
            _ = try DaemonCommand.parse(["\(key.flag)=\(value)"]).resolveConfiguration()
        }
        let reason = "must be between \(range.lowerBound) and \(range.upperBound)" + (unit.map { " \($0)" } ?? "")
        for value in [range.lowerBound - 1, range.upperBound + 1] {
            #expect {
                _ = try Self.fromFile(key, "\(value)", in: fixture)
            } throws: { error in
                "\(error)" == "\(fixture.path("atsproxy.conf")):1: key '\(key.name)': \(reason)"
            }
            #expect {
                _ = try DaemonCommand.parse(["\(key.flag)=\(value)"])
            } throws: { error in
                DaemonCommand.message(for: error).contains("\(key.flag) \(value): \(reason)")
            }
        }
    }

    static let choiceKeys = ConfigKey.allCases.filter { !$0.setting.choices.isEmpty }

    @Test(
        "a choice is one of the table's words: each is accepted, another is refused naming them",
        arguments: choiceKeys)
    func choices(_ key: ConfigKey) throws {
        let fixture = try ConfigFixture()
        for word in key.setting.choices { _ = try Self.fromFile(key, word, in: fixture) }
        #expect {
            _ = try Self.fromFile(key, "nonsense", in: fixture)
        } throws: { error in
            "\(error)".hasSuffix(
                ":1: key '\(key.name)': \"nonsense\" is not one of: \(key.setting.choices.joined(separator: ", "))")
        }
    }
}
