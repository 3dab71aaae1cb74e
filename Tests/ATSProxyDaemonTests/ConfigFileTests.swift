import ATSProxyDaemon
import ArgumentParser
import Testing

/// The config file's format, and the message for each way a line can be wrong.
@Suite("config file format")
struct ConfigFileTests {
    @Test("comments, blank lines, spaces, quotes, trailing comments, CRLF and repeated keys")
    func goodFile() throws {
        let text = """
            # atsproxy test configuration

              listen = 127.0.0.1:8080
            listen=[::1]:8080   # IPv6 too
            \tpolicy = "/etc/atsproxy/My App #1.plist"  # quoted, so the # stays
            log-file = /var/log/a#b.log
            mode = report\r
            verdict-ttl = "60"
            # the end
            """
        let file = try ConfigFile(path: "/etc/atsproxy/atsproxy.conf", text: text)
        #expect(file.entries.map(\.key) == [.listen, .listen, .policy, .logFile, .mode, .verdictTTL])
        #expect(
            file.entries.map(\.value) == [
                "127.0.0.1:8080", "[::1]:8080", "/etc/atsproxy/My App #1.plist", "/var/log/a#b.log", "report", "60",
            ])
        #expect(file.entries.map(\.line) == [3, 4, 5, 6, 7, 8])
    }

    @Test("an empty file, or one of comments only, sets nothing")
    func emptyFile() throws {
        #expect(try ConfigFile(path: "a.conf", text: "").entries.isEmpty)
        #expect(try ConfigFile(path: "a.conf", text: "\u{FEFF}# only a comment\n\n   \n").entries.isEmpty)
    }

    /// Each case is the file's text after two lines of preamble, so the line numbers are real ones.
    @Test(
        "every error names the file, the line and the key",
        arguments: [
            ("mdoe = report", ConfigurationError.Kind.unknownKey, ":3: key 'mdoe': unknown key; did you mean 'mode'?"),
            ("ca_file = a.pem", .unknownKey, ":3: key 'ca_file': unknown key; did you mean 'ca-file'?"),
            ("--threads = 2", .unknownKey, ":3: key '--threads': unknown key; did you mean 'threads'?"),
            ("colour = blue", .unknownKey, ":3: key 'colour': unknown key"),
            ("= 127.0.0.1:8080", .unknownKey, ":3: key '': no key before '='"),
            (
                "listen 127.0.0.1:8080", .missingEquals,
                ":3: key 'listen': no '=' between the key and its value (write 'listen = 127.0.0.1:8080')"
            ),
            ("mode", .missingEquals, ":3: key 'mode': no '=' and no value"),
            ("mode =", .emptyValue, ":3: key 'mode': no value; to keep the default, remove the line or comment it out"),
            (
                "mode = \"\"", .emptyValue,
                ":3: key 'mode': no value; to keep the default, remove the line or comment it out"
            ),
            (
                "mode = # later", .emptyValue,
                ":3: key 'mode': no value; to keep the default, remove the line or comment it out"
            ),
            ("policy = \"a.plist", .badQuoting, ":3: key 'policy': the value's opening quote is never closed"),
            ("policy = \"a.plist\" b.plist", .badQuoting, ":3: key 'policy': text after the closing quote: b.plist"),
            ("mode = enforec", .badValue, ":3: key 'mode': \"enforec\" is not one of: enforce, report"),
            (
                "os-profile = ios99", .badValue,
                ":3: key 'os-profile': \"ios99\" is not one of: ios9, ios10, ios17, ios26, apple-system"
            ),
            ("system-roots = yes", .badValue, ":3: key 'system-roots': \"yes\" is not one of: on, off"),
            (
                "client-class = safari", .badValue,
                ":3: key 'client-class': \"safari\" is not one of: urlsession, webkit, media"
            ),
            ("threads = 0", .badValue, ":3: key 'threads': must be between 1 and 256"),
            ("threads = two", .badValue, ":3: key 'threads': \"two\" is not a whole number"),
            ("verdict-ttl = -1", .badValue, ":3: key 'verdict-ttl': must be between 0 and 31536000 seconds"),
            (
                "verdict-cache-size = 0", .badValue,
                ":3: key 'verdict-cache-size': must be between 1 and 1000000 entries"
            ),
            (
                "verdict-cache-size = -3", .badValue,
                ":3: key 'verdict-cache-size': must be between 1 and 1000000 entries"
            ),
            (
                "verdict-cache-size = many", .badValue,
                ":3: key 'verdict-cache-size': \"many\" is not a whole number of entries"
            ),
            (
                "verdict-cache-size = 1e4", .badValue,
                ":3: key 'verdict-cache-size': \"1e4\" is not a whole number of entries"
            ),
            ("head-timeout = 0", .badValue, ":3: key 'head-timeout': must be between 1 and 86400 seconds"),
            ("idle-timeout = 1.5", .badValue, ":3: key 'idle-timeout': \"1.5\" is not a whole number of seconds"),
            ("shutdown-timeout = -5", .badValue, ":3: key 'shutdown-timeout': must be between 0 and 86400 seconds"),
            // Found by fuzz-config's review: the C call that parses an address stops at a NUL.
            (
                "listen = 127.0.0.1:8080\u{0}junk", .badValue,
                ":3: a control character (U+0000, NUL) in the line: a config file is text"
            ),
            (
                "policy = a\u{1B}[31m.plist", .badValue,
                ":3: a control character (U+001B) in the line: a config file is text"
            ),
            (
                "listen = nonsense", .badValue,
                ":3: key 'listen': not ADDR:PORT (for example 127.0.0.1:8080 or [::1]:8080)"
            ),
            (
                "allow-client = 10.0.0.0/33", .badValue,
                ":3: key 'allow-client': a /33 prefix is longer than 32 bits (a CIDR range, for example 192.168.1.0/24)"
            ),
            (
                "allow-destination = 127.0.0.0/8\nallow-destination = localhost/8", .badValue,
                ":4: key 'allow-destination': \"localhost\" is not an IP address (a CIDR range, for example 127.0.0.0/8)"
            ),
            (
                "mode = report\nthreads = 2\nmode = enforce", .repeatedKey,
                ":5: key 'mode': given again (first on line 3); only listen, transparent-listen, ca-file, app-anchor, system-anchor, client-class, allow-client, allow-destination, passthrough, pac-hosts may repeat"
            ),
            (
                "listen = 127.0.0.1:1\nlisten = 127.0.0.1:2\nlisten = 127.0.0.1:3\nclient-class = webkit\nclient-class = media",
                .conflictingValues,
                ":6: key 'client-class': given 2 times for 3 listen addresses: give it once for all, or once per listen line in the same order"
            ),
        ])
    func refused(_ text: String, _ kind: ConfigurationError.Kind, _ expected: String) throws {
        let fixture = try ConfigFixture()
        let path = try fixture.write("atsproxy.conf", "# preamble\n\n" + text + "\n")
        let command = try DaemonCommand.parse(["--config", path])
        #expect {
            try command.resolveConfiguration()
        } throws: { error in
            guard let error = error as? ConfigurationError else { return false }
            #expect(error.description == path + expected)
            #expect(error.kind == kind)
            return true
        }
    }

    @Test(
        "verdict-cache-size is read from the file, with its line, and a flag overrides it",
        arguments: [
            ([], 250), (["--verdict-cache-size", "7"], 7),
        ])
    func verdictCacheSize(_ flags: [String], _ size: Int) throws {
        let fixture = try ConfigFixture()
        let path = try fixture.write("atsproxy.conf", "mode = report\nverdict-cache-size = \"250\"  # a small lab\n")
        let configuration = try DaemonCommand.parse(["--config", path] + flags).resolveConfiguration()
        #expect(configuration.verdictCacheSize == size)
        #expect(configuration.origins[.verdictCacheSize] == (flags.isEmpty ? .file(path: path, line: 2) : .commandLine))
    }

    @Test("a missing config file or a directory is named, without a line")
    func unreadable() throws {
        let fixture = try ConfigFixture()
        for path in [fixture.path("absent.conf"), fixture.directory] {
            let command = try DaemonCommand.parse(["--config", path])
            #expect {
                try command.resolveConfiguration()
            } throws: { error in
                guard let error = error as? ConfigurationError else { return false }
                #expect(error.kind == .unreadableFile)
                #expect(error.description.hasPrefix(path + ": cannot read the config file: "), "\(error)")
                return true
            }
        }
    }
}
