import ATSPolicy
import ATSProxyDaemon
import ArgumentParser
import EventLoop
import ProxyCore
import Testing

/// How the file, the flags and the defaults combine into one ``DaemonConfiguration``.
@Suite("config resolution")
struct ConfigResolutionTests {
    static func resolve(_ arguments: [String]) throws -> DaemonConfiguration {
        try DaemonCommand.parse(arguments).resolveConfiguration()
    }

    @Test("without --config nothing is read and every setting takes its default")
    func defaults() throws {
        let configuration = try Self.resolve([])
        #expect(configuration.configFile == nil)
        #expect(configuration.listeners.map(\.address.description) == ["127.0.0.1:8080"])
        #expect(configuration.listeners.map(\.clientClass) == [.urlsession])
        #expect(configuration.policyFile == nil)
        #expect(configuration.mode == .enforce)
        #expect(configuration.systemRoots)
        #expect(configuration.allowedClients == ProxySettings.loopback)
        #expect(configuration.allowedDestinations.isEmpty)
        #expect(configuration.verdictTTL == .seconds(300))
        #expect(configuration.threads >= 1)
        #expect(configuration.controlSocket == "/run/atsproxy/control.sock")
        #expect(configuration.shutdownTimeout == .seconds(30))
        #expect(configuration.headTimeout == .seconds(10))
        #expect(configuration.connectTimeout == .seconds(10))
        #expect(configuration.idleTimeout == .seconds(300))
        #expect(configuration.origins.isEmpty)
    }

    @Test("a flag overrides the file's value; a repeatable flag replaces all of the file's lines")
    func flagsOverrideFile() throws {
        let fixture = try ConfigFixture()
        let path = try fixture.write(
            "atsproxy.conf",
            """
            mode = report
            listen = 127.0.0.1:1
            listen = 127.0.0.1:2
            threads = 3
            head-timeout = 4
            allow-client = 10.0.0.0/8
            allow-destination = 127.0.0.0/8
            allow-destination = 169.254.169.254/32
            """)
        let fileOnly = try Self.resolve(["--config", path])
        #expect(fileOnly.mode == .report)
        #expect(fileOnly.listeners.map(\.address.description) == ["127.0.0.1:1", "127.0.0.1:2"])
        #expect(fileOnly.origins[.listen] == .file(path: path, line: 2))
        #expect(fileOnly.allowedDestinations.map(\.description) == ["127.0.0.0/8", "169.254.169.254/32"])
        #expect(fileOnly.origins[.allowDestination] == .file(path: path, line: 7))

        let overridden = try Self.resolve([
            "--config", path, "--mode", "enforce", "--listen", "127.0.0.1:9", "--idle-timeout", "7",
        ])
        #expect(overridden.configFile == path)
        #expect(overridden.mode == .enforce)
        #expect(overridden.listeners.map(\.address.description) == ["127.0.0.1:9"])
        #expect(overridden.threads == 3)
        #expect(overridden.headTimeout == .seconds(4))
        #expect(overridden.idleTimeout == .seconds(7))
        #expect(overridden.allowedClients.map(\.description) == ["10.0.0.0/8"])
        #expect(overridden.origins[.mode] == .commandLine)
        #expect(overridden.origins[.threads] == .file(path: path, line: 4))
        #expect(overridden.origins[.connectTimeout] == nil)
    }

    @Test("relative paths in the file are taken from its directory; on the command line, as given")
    func relativePaths() throws {
        let fixture = try ConfigFixture()
        let path = try fixture.write(
            "etc/atsproxy.conf",
            """
            policy = Info.plist
            ca-file = ../certs/lab.pem
            ca-file = /opt/roots.pem
            hosts-file = "hosts"
            log-file = logs/atsproxy.log
            control-socket = run/control.sock
            """)
        let configuration = try Self.resolve(["--config", path])
        let directory = fixture.path("etc/")
        #expect(configuration.policyFile == directory + "Info.plist")
        #expect(configuration.caFiles == [directory + "../certs/lab.pem", "/opt/roots.pem"])
        #expect(configuration.hostsFile == directory + "hosts")
        #expect(configuration.logFile == directory + "logs/atsproxy.log")
        #expect(configuration.controlSocket == directory + "run/control.sock")

        let flagged = try Self.resolve(["--config", path, "--policy", "mine.plist"])
        #expect(flagged.policyFile == "mine.plist")
    }

    @Test("client classes pair with listeners wherever each was given")
    func clientClassesPerListener() throws {
        let fixture = try ConfigFixture()
        let path = try fixture.write("atsproxy.conf", "listen = 127.0.0.1:1\nlisten = 127.0.0.1:2\n")
        let paired = try Self.resolve(["--config", path, "--client-class", "urlsession", "--client-class", "webkit"])
        #expect(paired.listeners.map(\.clientClass) == [.urlsession, .webkit])

        let shared = try Self.resolve(["--config", path, "--client-class", "media"])
        #expect(shared.listeners.map(\.clientClass) == [.media, .media])
        #expect(shared.clientClass == .media)

        #expect {
            try Self.resolve([
                "--config", path, "--client-class", "webkit", "--client-class", "media", "--client-class", "media",
            ])
        } throws: { error in
            (error as? ConfigurationError)?.description
                == "--client-class: given 3 times for 2 --listen addresses (from \(path)): "
                + "give it once for all, or once per --listen in the same order"
        }
    }

    @Test("the timeouts reach the proxy's settings")
    func timeoutsReachProxySettings() throws {
        let fixture = try ConfigFixture()
        let path = try fixture.write("atsproxy.conf", "head-timeout = 2\nconnect-timeout = 3\nidle-timeout = 4\n")
        let settings = try Self.resolve(["--config", path]).proxySettings(policy: TransportSecurityPolicy(), hosts: nil)
        #expect(settings.headTimeout == .seconds(2))
        #expect(settings.connectTimeout == .seconds(3))
        #expect(settings.idleTimeout == .seconds(4))
    }

    @Test("each resolve reads the file again, and a broken file throws instead of exiting")
    func resolveRereadsTheFile() throws {
        let fixture = try ConfigFixture()
        let path = try fixture.write("atsproxy.conf", "mode = report\n")
        let command = try DaemonCommand.parse(["--config", path])
        #expect(try command.resolveConfiguration().mode == .report)

        try fixture.write("atsproxy.conf", "mode = enforce\nverdict-ttl = 5\n")
        let changed = try command.resolveConfiguration()
        #expect(changed.mode == .enforce)
        #expect(changed.verdictTTL == .seconds(5))

        try fixture.write("atsproxy.conf", "mode = enforce\nmode = report\n")
        #expect(throws: ConfigurationError.self) { try command.resolveConfiguration() }
    }

    @Test("the keys are the flags: every key is a flag of the same name")
    func keysAreFlags() throws {
        let help = DaemonCommand.helpMessage(columns: 500)
        for key in ConfigKey.allCases {
            #expect(help.contains("--\(key.name) <"), "no flag \(key.flag)")
        }
    }
}
