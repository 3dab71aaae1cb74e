import Foundation
import Testing

@testable import ATSProxyDaemon

/// What is written about the settings outside the code, against the table (``DaemonSetting``):
/// `docs/daemon.md`'s table of flags and the config fuzzer's dictionary and seed. The shipped
/// config file has its own suite (``ShippedConfigTests``).
@Suite("settings documents")
struct SettingsDocumentsTests {
    /// A row of `docs/daemon.md`'s table of flags.
    struct Row {
        var flag: String
        var value: String
        var defaultText: String
        var reload: String
        var description: String
    }

    /// The rows of the table under "## Flags", by flag name (without `--`).
    static func flagRows() throws -> [String: Row] {
        let text = try String(contentsOfFile: Repository.path("docs/daemon.md"), encoding: .utf8)
        let section = try #require(text.range(of: "\n## Flags\n"))
        var rows: [String: Row] = [:]
        for line in text[section.upperBound...].split(separator: "\n").drop(while: { !$0.hasPrefix("|") }) {
            guard line.hasPrefix("|") else { break }
            // `\|` is a bar inside a cell (enforce\|report); split on the others.
            let cells = line.replacingOccurrences(of: "\\|", with: "\u{0}").split(separator: "|")
                .map { $0.replacingOccurrences(of: "\u{0}", with: "|").trimmingCharacters(in: .whitespaces) }
            guard cells.count == 4, cells[0].hasPrefix("`--") else { continue }
            let flag = cells[0].dropFirst(3).dropLast()  // `--listen ADDR:PORT` -> listen ADDR:PORT
            let name = String(flag.prefix { $0 != " " })
            rows[name] = Row(
                flag: name, value: flag.drop { $0 != " " }.trimmingCharacters(in: .whitespaces),
                defaultText: cells[1], reload: cells[2], description: cells[3])
        }
        return rows
    }

    @Test("docs/daemon.md's table of flags has a row for each key, and for --config and --check-config only")
    func docsListEveryKey() throws {
        let rows = Set(try Self.flagRows().keys)
        let keys = Set(ConfigKey.allCases.map(\.name))
        #expect(keys.subtracting(rows).isEmpty, "no row in docs/daemon.md for \(keys.subtracting(rows).sorted())")
        #expect(
            rows.subtracting(keys) == ["config", "check-config"],
            "rows in docs/daemon.md for no setting: \(rows.subtracting(keys).subtracting(["config", "check-config"]))")
    }

    @Test(
        "each key's row in docs/daemon.md has the table's value name, default, reload behaviour and repeatability",
        arguments: ConfigKey.allCases)
    func docsRowMatchesTable(_ key: ConfigKey) throws {
        let setting = key.setting
        let row = try #require(try Self.flagRows()[key.name], "no row for \(key.flag)")
        #expect(row.value == setting.valueName)
        let defaultText =
            switch setting.defaultValue {
            case .value(let value): "`\(value)`"
            case .described(let words): words
            case .none: "none"
            }
        #expect(row.defaultText == defaultText)
        #expect(row.reload == setting.reload.rawValue)
        #expect(row.description.contains("repeatable") == setting.isRepeatable, "\(row.description)")
    }

    @Test("fuzz-config's dictionary holds every key and every word a choice takes")
    func fuzzDictionary() throws {
        let dictionary = try String(contentsOfFile: Repository.path("Fuzz/Dictionaries/config.dict"), encoding: .utf8)
        let tokens = Set(
            dictionary.split(separator: "\n").filter { $0.hasPrefix("\"") }.map { String($0.dropFirst().dropLast()) })
        let words = DaemonSetting.all.flatMap { [$0.key.name] + $0.choices }
        let missing = Set(words).subtracting(tokens).sorted()
        #expect(missing.isEmpty, "add to Fuzz/Dictionaries/config.dict: \(missing)")
    }

    @Test("fuzz-config's every-key seed sets every key")
    func everyKeySeed() throws {
        let seed = try String(contentsOfFile: Repository.path("Fuzz/Corpus/config/every-key"), encoding: .utf8)
        let file = try ConfigFile(path: "every-key", text: seed)
        let missing = Set(ConfigKey.allCases).subtracting(file.entries.map(\.key)).map(\.name).sorted()
        #expect(missing.isEmpty, "add to Fuzz/Corpus/config/every-key: \(missing)")
    }
}
