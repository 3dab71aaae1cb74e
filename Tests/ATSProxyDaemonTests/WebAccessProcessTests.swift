import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// The web listener beyond loopback: a start without `--web-token` is refused; a client in a network
/// namespace of the test's own (a veth pair on 10.200.x.0/30) gets 401 without the token, in by
/// `?token=` (with a cookie that keeps it), the cookie, or a bearer header; loopback needs none.
@Suite(.startsProcesses(timeLimit: .seconds(60)))
struct WebAccessProcessTests {
    @Test("web-listen beyond loopback without web-token: the start is refused, naming both")
    func tokenRequired() throws {
        let result = try runCommand(
            DaemonProcess.executable,
            ["--listen", "127.0.0.1:0", "--web-listen", "0.0.0.0:0", "--control-socket", "/tmp/atsproxy-unused.sock"],
            timeLimit: 20)
        #expect(result.status != 0)
        #expect(result.standardError.contains("web-listen"))
        #expect(result.standardError.contains("web-token"))
    }

    /// A namespace with one end of a veth pair, the other end on the host: its own addresses, gone with it.
    final class Namespace {
        let name: String
        let hostAddress: String
        let namespaceAddress: String
        private let hostLink: String

        init() throws {
            let tag = String(UUID().uuidString.prefix(6)).lowercased()
            let octet = Int.random(in: 1...250)
            name = "atsproxy-\(tag)"
            hostLink = "atsh\(tag)"
            hostAddress = "10.200.\(octet).1"
            namespaceAddress = "10.200.\(octet).2"
            for command in [
                ["netns", "add", name],
                ["link", "add", hostLink, "type", "veth", "peer", "name", "atsn\(tag)"],
                ["link", "set", "atsn\(tag)", "netns", name],
                ["addr", "add", hostAddress + "/30", "dev", hostLink],
                ["link", "set", hostLink, "up"],
                ["-n", name, "addr", "add", namespaceAddress + "/30", "dev", "atsn\(tag)"],
                ["-n", name, "link", "set", "atsn\(tag)", "up"],
                ["-n", name, "link", "set", "lo", "up"],
            ] {
                let result = try runCommand("/usr/sbin/ip", command)
                guard result.status == 0 else {
                    throw FixtureError(message: "ip \(command.joined(separator: " ")): \(result.standardError)")
                }
            }
        }

        deinit {
            _ = try? runCommand("/usr/sbin/ip", ["link", "del", hostLink])
            _ = try? runCommand("/usr/sbin/ip", ["netns", "del", name])
        }

        /// curl run inside the namespace: status code, then the response's headers.
        func curl(_ arguments: [String]) throws -> (status: String, headers: String) {
            let result = try runCommand(
                "/usr/sbin/ip",
                [
                    "netns", "exec", name, "/usr/bin/curl", "-s", "-D", "-", "-o", "/dev/null", "-w", "%{http_code}",
                    "--max-time", "10",
                ] + arguments)
            // -w writes the three-digit status after the headers.
            return (String(result.standardOutput.suffix(3)), result.standardOutput)
        }
    }

    static var canMakeNamespaces: Bool {
        geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip")
    }

    @Test(
        "from another network namespace: 401 without the token; ?token=, its cookie and a bearer header get in; loopback needs none",
        .enabled(if: canMakeNamespaces, "needs root and ip(8) to make a network namespace"))
    func tokenFromBeyondLoopback() throws {
        let namespace = try Namespace()
        let fixture = try InterceptFixture(names: [])
        let token = "0123456789abcdef0123456789abcdef"
        let daemon = try fixture.daemon(intercept: false, ["--web-listen", "0.0.0.0:0", "--web-token", token])
        let web = try #require(daemon.webPort)
        let base = "http://\(namespace.hostAddress):\(web)"

        #expect(try namespace.curl([base + "/"]).status == "401")
        #expect(try namespace.curl([base + "/metrics"]).status == "401")
        #expect(try namespace.curl([base + "/?token=wrong-token-of-the-right-size"]).status == "401")
        #expect(try namespace.curl(["-H", "Cookie: atsproxy_token=nope", base + "/"]).status == "401")
        let admitted = try namespace.curl([base + "/?token=" + token])
        #expect(admitted.status == "200")
        #expect(admitted.headers.contains("Set-Cookie: atsproxy_token=\(token)"))
        #expect(
            try namespace.curl(["-H", "Cookie: atsproxy_token=\(token)", base + "/api/state.json"]).status == "200")
        #expect(try namespace.curl(["-H", "Authorization: Bearer \(token)", base + "/metrics"]).status == "200")

        let local = try runCommand(
            "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(web)/metrics"])
        #expect(local.standardOutput == "200")
        #expect(daemon.terminate() == 0)
    }
}
