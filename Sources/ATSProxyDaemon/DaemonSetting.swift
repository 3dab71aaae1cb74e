import ArgumentParser

/// One setting of the daemon, declared once: everything the flag, the config-file parser, a
/// reload, `--help`, the docs and the shipped config file need to know about it. The settings
/// themselves are ``ConfigKey/setting`` (DaemonSetting+Catalogue.swift), one switch over the keys,
/// so a key without its entry does not compile.
///
/// What ArgumentParser cannot take from a value (a property wrapper per flag) takes its name and
/// help from here (``ArgumentHelp/setting(_:)``); `SettingsCatalogueTests` checks that the flags
/// declared match this table, and that `docs/daemon.md`, `config/atsproxy.conf` and the fuzz
/// dictionary agree with it.
package struct DaemonSetting: Sendable {
    /// What a changed value does when the daemon reloads.
    package enum Reload: String, Sendable {
        /// Taken by connections accepted from then on.
        case applies = "reload"
        /// Bound into sockets, threads, open files or the probes' trust store at start: a reload
        /// reports the key under `needs_restart` and keeps the running value.
        case needsRestart = "restart"
    }

    /// The form of a value, and the rule it is checked by (``SettingValue``).
    package enum Kind: Sendable {
        /// A file or directory: relative ones are taken from the config file's directory.
        case path
        /// One of these words, spelt exactly.
        case choice([String])
        /// A whole number in `range`, counted in `unit` (nil: a plain count).
        case integer(ClosedRange<Int>, unit: String?)
        /// Text with a rule of its own (an address, a CIDR range, a host pattern, a token).
        case text
    }

    /// The value a setting takes when neither the file nor a flag gives it.
    package enum Default: Sendable, Equatable {
        /// A value as it would be written (`10`, `enforce`): the shipped file's commented line
        /// shows it.
        case value(String)
        /// Words for a default that is not a value (`the number of cores`).
        case described(String)
        /// Nothing: the feature is off, or the list empty.
        case none
    }

    package let key: ConfigKey
    /// The value's placeholder in `--help` and the docs: `SECONDS`, `FILE`, or the words of a
    /// short choice (`enforce|report`).
    package let valueName: String
    package let kind: Kind
    /// Whether each line (each flag) adds a value, instead of a second line being an error.
    package let isRepeatable: Bool
    package let reload: Reload
    package let defaultValue: Default
    /// One sentence for `--help`, without the repeatable and default notes (``helpText`` adds them).
    package let summary: String
    /// More for `--help`, under the summary; empty for none.
    package let discussion: String
    /// A value it accepts that is not its default: the shipped file's commented line when the
    /// default is not a value, and what the tests set it to.
    package let example: String

    init(
        _ key: ConfigKey, _ valueName: String, _ kind: Kind, repeatable: Bool = false, _ reload: Reload,
        default defaultValue: Default, example: String, _ summary: String, discussion: String = ""
    ) {
        self.key = key
        self.valueName = valueName
        self.kind = kind
        self.isRepeatable = repeatable
        self.reload = reload
        self.defaultValue = defaultValue
        self.example = example
        self.summary = summary
        self.discussion = discussion
    }

    /// Every setting, in the keys' order.
    package static var all: [DaemonSetting] { ConfigKey.allCases.map(\.setting) }

    /// The flag's help line: the summary, then whether it repeats, its default, and whether a
    /// change needs a restart.
    package var helpText: String {
        var notes: [String] = []
        if isRepeatable { notes.append("repeatable") }
        switch defaultValue {
        case .value(let value): notes.append("default \(value)")
        case .described(let words): notes.append("default: \(words)")
        case .none: break
        }
        if reload == .needsRestart { notes.append("a change needs a restart") }
        return notes.isEmpty ? "\(summary)." : "\(summary) (\(notes.joined(separator: "; ")))."
    }

    /// The choices of a ``Kind/choice`` setting; empty for the others.
    package var choices: [String] {
        if case .choice(let words) = kind { words } else { [] }
    }
}

extension ArgumentHelp {
    /// The help of `key`'s flag, from its ``DaemonSetting``.
    static func setting(_ key: ConfigKey) -> ArgumentHelp {
        let setting = key.setting
        return ArgumentHelp(setting.helpText, discussion: setting.discussion, valueName: setting.valueName)
    }
}

extension NameSpecification {
    /// `key`'s flag: `--` and the config key.
    static func setting(_ key: ConfigKey) -> NameSpecification { .customLong(key.name) }
}
