import ATSProxyCtl
import ArgumentParser
import Testing

/// `atsproxyctl SUB --help`, `-h` and `help SUB` show that subcommand's own overview, usage, options
/// and examples, not the top-level help.
@Suite("atsproxyctl help per subcommand")
struct HelpTests {
    /// A subcommand and options that only its own help lists.
    struct Subcommand: CustomTestStringConvertible, Sendable {
        let name: String
        let options: [String]
        var testDescription: String { name }
    }

    static let subcommands = [
        Subcommand(name: "check", options: ["--strict", "--json", "--os-profile", "--legacy-keys", "--local-network"]),
        Subcommand(name: "explain", options: ["--policy", "--scheme", "--client", "--os-profile"]),
        Subcommand(
            name: "diagnose",
            options: [
                "--ca-file", "--system-roots", "--hosts-file", "--timeout", "--verbose", "--no-survey", "--os-profile",
            ]),
        Subcommand(
            name: "report",
            options: ["--policy", "--app", "--host", "--client", "--client-class", "--json", "--os-profile"]),
        Subcommand(name: "har", options: ["--app", "--host", "--client", "--since"]),
        Subcommand(name: "status", options: ["--socket", "--json"]),
        Subcommand(name: "onboard", options: ["--socket", "--json"]),
        Subcommand(name: "reload", options: ["--socket", "--json"]),
        Subcommand(name: "stats", options: ["--socket", "--json"]),
        Subcommand(name: "metrics", options: ["--socket", "--json"]),
        Subcommand(name: "flush-cache", options: ["--socket", "--json"]),
        Subcommand(name: "reopen-logs", options: ["--socket", "--json"]),
        Subcommand(name: "passthrough", options: ["list", "clear"]),
        Subcommand(name: "ca", options: ["init", "export", "show"]),
        Subcommand(name: "capture", options: ["rules"]),
        Subcommand(name: "wireguard", options: ["add-device", "remove-device", "list", "show-device"]),
    ]

    /// The three ways to ask for a subcommand's help.
    static let forms: [@Sendable (String) -> [String]] = [{ [$0, "--help"] }, { [$0, "-h"] }, { ["help", $0] }]

    @Test("the table covers every subcommand atsproxyctl has")
    func everySubcommand() {
        let declared = ATSProxyCtlCommand.configuration.subcommands.map { $0.configuration.commandName ?? "" }
        #expect(Set(declared) == Set(Self.subcommands.map(\.name)))
    }

    @Test("each subcommand's help is its own: overview, usage, options, examples", arguments: subcommands, 0..<3)
    func ownHelp(subcommand: Subcommand, form: Int) throws {
        let arguments = Self.forms[form](subcommand.name)
        let result = ATSProxyCtl.run(arguments)
        #expect(result.exitCode == 0, "\(arguments): \(result.standardError)")
        let type = try #require(
            ATSProxyCtlCommand.configuration.subcommands.first {
                $0.configuration.commandName == subcommand.name
            })
        // What ArgumentParser renders for that subcommand, and nothing of the root's.
        #expect(result.standardOutput == ATSProxyCtlCommand.helpMessage(for: type) + "\n", "\(arguments)")
        let help = result.standardOutput
        #expect(help.hasPrefix("OVERVIEW: "), "\(arguments)")
        #expect(
            !help.contains("Check, explain and diagnose App Transport Security policies"),
            "\(arguments): the root's help")
        #expect(help.contains("USAGE: atsproxyctl \(subcommand.name)"), "\(arguments)")
        for option in subcommand.options {
            #expect(help.contains(option), "\(arguments): \(option) is missing")
        }
        let examples = try #require(help.firstRange(of: "Examples:\n"), "\(arguments): no examples")
        #expect(help[examples.upperBound...].hasPrefix("  atsproxyctl \(subcommand.name)"), "\(arguments)")
    }

    @Test(
        "the root alone, --help and help show the top-level help with every subcommand",
        arguments: [[], ["--help"], ["help"]])
    func rootHelp(arguments: [String]) {
        let result = ATSProxyCtl.run(arguments)
        #expect(result.exitCode == 0)
        #expect(result.standardOutput.contains("Check, explain and diagnose App Transport Security policies"))
        for subcommand in Self.subcommands {
            #expect(result.standardOutput.contains("  \(subcommand.name)"), "\(subcommand.name) is not listed")
        }
    }

    @Test(
        "a subcommand that does not exist, run or asked about, is a usage error naming it and the closest one",
        arguments: [["help", "chek"], ["chek", "Info.plist"], ["help", "flush"]])
    func unknownSubcommand(arguments: [String]) {
        let result = ATSProxyCtl.run(arguments)
        #expect(result.exitCode == 2)
        #expect(result.standardOutput.isEmpty)
        let expected =
            arguments.contains("chek")
            ? "Error: no subcommand 'chek'; did you mean 'check'?\n  See 'atsproxyctl --help' for the subcommands.\n"
            : "Error: no subcommand 'flush'\n  See 'atsproxyctl --help' for the subcommands.\n"
        #expect(result.standardError == expected)
    }
}
