import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// The proxy's own pages, end to end with curl against the real daemon: through the proxy for the
/// onboarding host (http, and https through CONNECT with a leaf from the CA), and straight to the
/// listener (http, and TLS as iOS tries first for a PAC URL); the CA downloads; the PAC file; and
/// that none of it is judged or logged.
@Suite(.startsProcesses(timeLimit: .seconds(60)))
struct OnboardingProcessTests {
    /// curl's `-i` output split into status, headers (lowercased names) and body.
    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: Data

        init(_ output: Data) {
            let separator = Data("\r\n\r\n".utf8)
            let split = output.range(of: separator)
            let head = String(decoding: output[..<(split?.lowerBound ?? output.endIndex)], as: UTF8.self)
            body = split.map { Data(output[$0.upperBound...]) } ?? Data()
            let lines = head.components(separatedBy: "\r\n")
            status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
            }
            self.headers = headers
        }

        var text: String { String(decoding: body, as: UTF8.self) }
    }

    static func get(_ arguments: [String]) throws -> (Answer, CommandResult) {
        let result = try runCommand("/usr/bin/curl", ["-sS", "-i", "--max-time", "20"] + arguments)
        return (Answer(result.standardOutputBytes), result)
    }

    @Test(
        "http://atsproxy.test/ through the proxy says connected with the client's address; the same page straight from the listener says not yet"
    )
    func connectedOnlyThroughTheProxy() throws {
        let fixture = try InterceptFixture(names: [])
        let daemon = try fixture.daemon(intercept: false)
        let (proxied, run) = try Self.get(["--proxy", "http://127.0.0.1:\(daemon.port)", "http://atsproxy.test/"])
        #expect(proxied.status == 200, "\(run.standardError)")
        #expect(proxied.headers["x-atsproxy"] == "onboarding")
        #expect(proxied.headers["content-type"]?.hasPrefix("text/html") == true)
        #expect(proxied.text.contains("127.0.0.1"))
        #expect(proxied.text.localizedCaseInsensitiveContains("connected"))

        let (direct, _) = try Self.get(["http://127.0.0.1:\(daemon.port)/"])
        #expect(direct.status == 200)
        #expect(direct.headers["x-atsproxy"] == "onboarding")
        #expect(direct.text.contains("Configure Proxy"))
        #expect(direct.text.contains("127.0.0.1:\(daemon.port)"))
        #expect(proxied.text != direct.text)

        // Keep-alive: a page, then a request to proxy, on one connection.
        let (both, _) = try Self.get([
            "--proxy", "http://127.0.0.1:\(daemon.port)", "http://atsproxy.test/status.json",
            "http://atsproxy.test/status.json",
        ])
        #expect(both.status == 200)
        // Nothing the proxy answered itself is a connection of the app's: the log stays empty. Read
        // once every connection has ended (each writes its line, if any, before it leaves the count).
        #expect(daemon.awaitNoOpenConnections(), "connections still open")
        #expect(daemon.logLines(atLeast: 0).isEmpty)
        #expect(daemon.terminate() == 0)
    }

    @Test("https://atsproxy.test/check loads through the proxy with the CA trusted, and fails the handshake without it")
    func checkOverTLS() throws {
        let fixture = try InterceptFixture(names: [])
        let daemon = try fixture.daemon(intercept: false, ["--ca-dir", fixture.caDir])
        let (trusted, run) = try Self.get([
            "--proxy", "http://127.0.0.1:\(daemon.port)", "--cacert", fixture.caPEM, "https://atsproxy.test/check",
        ])
        #expect(trusted.status == 200, "\(run.standardError)")
        #expect(trusted.text.localizedCaseInsensitiveContains("trusted"))
        let (_, untrusted) = try Self.get(["--proxy", "http://127.0.0.1:\(daemon.port)", "https://atsproxy.test/check"])
        // 60: the peer certificate cannot be authenticated.
        #expect(untrusted.status == 60, "curl: \(untrusted.standardError)")
        #expect(daemon.terminate() == 0)
    }

    @Test("without a CA, CONNECT atsproxy.test says how to make one, and TLS to the listener is closed")
    func noCA() throws {
        let fixture = try InterceptFixture(names: [])
        let daemon = try fixture.daemon(intercept: false, ["--ca-dir", fixture.directory + "/nowhere"])
        let (answer, _) = try Self.get(["--proxy", "http://127.0.0.1:\(daemon.port)", "https://atsproxy.test/"])
        #expect(answer.status == 503)  // curl shows no CONNECT response's body; the downloads' 404 below says it.
        let (download, _) = try Self.get(["http://127.0.0.1:\(daemon.port)/ca.pem"])
        #expect(download.status == 404)
        #expect(download.text.contains("atsproxyctl ca init"))
        let (_, tls) = try Self.get(["-k", "https://127.0.0.1:\(daemon.port)/proxy.pac"])
        #expect(tls.status != 0)
        #expect(daemon.terminate() == 0)
    }

    @Test("the CA downloads are the CA's own bytes, with iOS's and the browsers' content types")
    func downloads() throws {
        let fixture = try InterceptFixture(names: [])
        let daemon = try fixture.daemon(intercept: false, ["--ca-dir", fixture.caDir])
        let pem = try Data(contentsOf: URL(fileURLWithPath: fixture.caPEM))
        let (served, _) = try Self.get(["--proxy", "http://127.0.0.1:\(daemon.port)", "http://atsproxy.test/ca.pem"])
        #expect(served.status == 200)
        #expect(served.body == pem)
        #expect(served.headers["content-disposition"]?.contains("atsproxy-ca.pem") == true)
        let (cer, _) = try Self.get(["http://127.0.0.1:\(daemon.port)/ca.cer"])
        #expect(cer.headers["content-type"] == "application/pkix-cert")
        try cer.body.write(to: URL(fileURLWithPath: fixture.directory + "/served.cer"))
        let subject = try fixture.x509(
            fixture.directory + "/served.cer", ["-inform", "DER", "-fingerprint", "-sha256"])
        let original = try fixture.x509(fixture.caPEM, ["-fingerprint", "-sha256"])
        #expect(subject == original)
        let (profile, _) = try Self.get(["http://127.0.0.1:\(daemon.port)/ca.mobileconfig"])
        #expect(profile.headers["content-type"] == "application/x-apple-aspen-config")
        #expect(profile.text.contains("com.apple.security.root"))
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "/proxy.pac names the address the device reached, over http and over TLS straight to the listener; --pac-hosts narrows it"
    )
    func pac() throws {
        let fixture = try InterceptFixture(names: [])
        let daemon = try fixture.daemon(intercept: false, ["--ca-dir", fixture.caDir, "--pac-hosts", "*.example.com"])
        let (plain, _) = try Self.get(["http://127.0.0.1:\(daemon.port)/proxy.pac"])
        #expect(plain.status == 200)
        #expect(plain.headers["content-type"] == "application/x-ns-proxy-autoconfig")
        #expect(plain.text.contains("PROXY 127.0.0.1:\(daemon.port)"))
        #expect(plain.text.contains("example.com"))
        let (secure, run) = try Self.get(["--cacert", fixture.caPEM, "https://127.0.0.1:\(daemon.port)/proxy.pac"])
        #expect(secure.status == 200, "\(run.standardError)")
        #expect(secure.body == plain.body)
        #expect(daemon.terminate() == 0)
    }
}
