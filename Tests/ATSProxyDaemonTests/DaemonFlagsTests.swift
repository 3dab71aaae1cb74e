import ATSPolicy
import ATSProxyDaemon
import ArgumentParser
import EventLoop
import Foundation
import ProxyCore
import TLSInspection
import Testing

@Suite("atsproxy flags")
struct DaemonFlagsTests {
    @Test("defaults: 127.0.0.1:8080, enforce, ATS defaults")
    func defaults() throws {
        let configuration = try DaemonCommand.parse([]).resolveConfiguration()
        #expect(configuration.listeners.map(\.address.description) == ["127.0.0.1:8080"])
        #expect(configuration.mode == .enforce)
        #expect(configuration.policyFile == nil)
    }

    @Test("--help and -h show the flags, the config file's part, and examples", arguments: [["--help"], ["-h"]])
    func help(arguments: [String]) {
        #expect(throws: (any Error).self) { try DaemonCommand.parse(arguments) }
        do {
            _ = try DaemonCommand.parse(arguments)
        } catch {
            #expect(DaemonCommand.exitCode(for: error) == .success)
            let help = DaemonCommand.fullMessage(for: error)
            #expect(help.contains("USAGE: atsproxy <options>"))
            for flag in [
                "--listen", "--policy", "--mode", "--idle-timeout", "--connect-timeout", "--config", "--check-config",
            ] {
                #expect(help.contains(flag), "\(flag) is missing")
            }
            let examples = help.firstRange(of: "Examples:\n")
            #expect(examples.map { help[$0.upperBound...].hasPrefix("  atsproxy --policy") } == true, "\(help)")
        }
    }

    @Test(
        "bad values are refused with the flag named",
        arguments: [
            (["--listen", "nonsense"], "--listen nonsense"),
            (["--allow-client", "10.0.0.0/33"], "--allow-client 10.0.0.0/33"),
            (
                ["--allow-destination", "127.0.0.1"],
                "--allow-destination 127.0.0.1: no /prefix length (a CIDR range, for example 127.0.0.0/8)"
            ),
            (["--allow-destination", "fe80::%lo/10"], "--allow-destination fe80::%lo/10"),
            (["--verdict-ttl=-1"], "--verdict-ttl -1: must be between 0 and 31536000 seconds"),
            (["--threads", "0"], "--threads"),
            (["--mode", "observe"], "observe"),
            (["--os-profile", "ios99"], "ios99"),
            (["--head-timeout", "0"], "--head-timeout 0: must be between 1 and 86400 seconds"),
            (["--shutdown-timeout=-1"], "--shutdown-timeout -1: must be between 0 and 86400 seconds"),
            (["--idle-timeout", "86401"], "--idle-timeout 86401"),
            (["--connect-timeout", "0"], "--connect-timeout 0"),
            (["--verdict-cache-size", "0"], "--verdict-cache-size 0: must be between 1 and 1000000 entries"),
            (["--verdict-cache-size=-5"], "--verdict-cache-size -5: must be between 1 and 1000000 entries"),
            (
                ["--verdict-cache-size", "1000001"],
                "--verdict-cache-size 1000001: must be between 1 and 1000000 entries"
            ),
            (["--verdict-cache-size", "lots"], "'lots' is invalid for '--verdict-cache-size"),
            (["--verdict-cache-size", "2.5"], "'2.5' is invalid for '--verdict-cache-size"),
        ])
    func refused(_ arguments: [String], _ phrase: String) {
        do {
            _ = try DaemonCommand.parse(arguments)
            Issue.record("\(arguments) should be refused")
        } catch {
            #expect(DaemonCommand.message(for: error).contains(phrase), "\(DaemonCommand.message(for: error))")
        }
    }

    @Test("repeatable flags collect every value")
    func repeatable() throws {
        let configuration = try DaemonCommand.parse([
            "--listen", "127.0.0.1:0", "--listen", "[::1]:0", "--allow-client", "10.0.0.0/8", "--ca-file", "a.pem",
            "--ca-file", "b.pem", "--mode", "report",
        ]).resolveConfiguration()
        #expect(configuration.listeners.map(\.address.description) == ["127.0.0.1:0", "[::1]:0"])
        #expect(configuration.caFiles == ["a.pem", "b.pem"])
        #expect(configuration.mode == .report)
    }

    @Test(
        "--allow-destination collects every range; without it none is open, and the proxy gets them",
        arguments: [
            ([], []), (["--allow-destination", "127.0.0.0/8"], ["127.0.0.0/8"]),
            (["--allow-destination", "127.0.0.0/8", "--allow-destination", "::1/128"], ["127.0.0.0/8", "::1/128"]),
        ])
    func allowDestination(_ arguments: [String], _ ranges: [String]) throws {
        let configuration = try DaemonCommand.parse(arguments).resolveConfiguration()
        #expect(configuration.allowedDestinations.map(\.description) == ranges)
        let settings = configuration.proxySettings(policy: TransportSecurityPolicy(), hosts: nil)
        #expect(settings.allowedDestinations.map(\.description) == ranges)
        #expect(ConfigKey.allowDestination.takesEffectOnReload && ConfigKey.allowDestination.isRepeatable)
    }

    @Test(
        "--hosts-file is read into one table that the proxy settings carry; it takes effect on reload; a bad line is named"
    )
    func hostsFile() throws {
        let directory = try ServiceFiles.temporaryDirectory()
        let path = directory + "/hosts"
        try "192.0.2.7 app.test\n".write(toFile: path, atomically: true, encoding: .utf8)
        let configuration = try DaemonCommand.parse(["--hosts-file", path]).resolveConfiguration()
        let table = try #require(try configuration.hostsTable())
        let settings = configuration.proxySettings(policy: TransportSecurityPolicy(), hosts: table)
        #expect(settings.hosts?.addresses(for: "APP.test.") == ["192.0.2.7"])
        #expect(settings.hosts == table)
        #expect(ConfigKey.hostsFile.takesEffectOnReload && !ConfigKey.hostsFile.isRepeatable)

        try "192.0.2.7 app.test\nnot-an-address app.test\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: HostsTable.ReadError.self) { try configuration.hostsTable() }
        do {
            _ = try configuration.hostsTable()
        } catch {
            #expect(
                configuration.unusableFile(.hostsFile, error).description.contains("\(path):2: \"not-an-address\""),
                "\(error)")
        }
    }

    @Test("the new flags reach the configuration")
    func newFlags() throws {
        let configuration = try DaemonCommand.parse([
            "--control-socket", "/tmp/ctl.sock", "--shutdown-timeout", "0", "--head-timeout", "2", "--connect-timeout",
            "3",
            "--idle-timeout", "4",
        ]).resolveConfiguration()
        #expect(configuration.controlSocket == "/tmp/ctl.sock")
        #expect(configuration.shutdownTimeout == .zero)
        #expect(configuration.headTimeout == .seconds(2))
        #expect(configuration.connectTimeout == .seconds(3))
        #expect(configuration.idleTimeout == .seconds(4))
    }

    @Test(
        "--verdict-cache-size reaches the configuration; without it the cache holds 10000",
        arguments: [
            ([], 10_000), (["--verdict-cache-size", "3"], 3), (["--verdict-cache-size=1"], 1),
            (["--verdict-cache-size", "1000000"], 1_000_000),
        ])
    func verdictCacheSize(_ arguments: [String], _ size: Int) throws {
        #expect(try DaemonCommand.parse(arguments).resolveConfiguration().verdictCacheSize == size)
    }
}
