import Foundation
import TLSTestSupport
import Testing

/// The proxy's loop probes against a real nginx, the server most HTTPS hosts run: a compliant
/// virtual host is let through to its page, one with an expired certificate is blocked and the
/// violation named. nginx is part of `make deps`; without it these tests fail, saying so.
@Suite("nginx upstreams", .startsProcesses(timeLimit: .seconds(60)))
struct NginxUpstreamTests {
    /// A root, a compliant leaf for localhost and an expired one; nginx serving each on its port.
    static func start() throws -> (CertificateFactory, TestNginx) {
        let factory = try compliantChain()
        let day: TimeInterval = 86_400
        try factory.certificate("expired", issuer: "root", notBefore: Date.now - 90 * day, notAfter: Date.now - day)
        let nginx = try TestNginx(
            directory: factory.directory, certificates: ["leaf", "expired"], body: "nginx says hello\n")
        return (factory, nginx)
    }

    @Test("a compliant nginx host: the CONNECT is allowed and curl gets nginx's page through the tunnel")
    func compliant() throws {
        let (factory, nginx) = try Self.start()
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost)
        defer { proxy.stop() }
        let curl = try proxy.curlHTTPS(factory, port: nginx.ports[0])
        let line = try #require(try proxy.waitForLogLines(1).first)
        #expect(curl.status == 0, "\(curl.standardError)")
        #expect(curl.standardOutput == "nginx says hello\n")
        #expect(line.action == "allowed" && line.compliant == true && line.violations == [], "\(line)")
        #expect(line.tlsVersion == "TLSv1.3", "\(line)")
        #expect(line.trust == "user_installed_root", "\(line)")
        #expect(line.certificateSubjects.first == "CN=leaf", "\(line)")
    }

    @Test("an nginx host with an expired certificate: 403, blocked, the violation and Apple's error named")
    func expired() throws {
        let (factory, nginx) = try Self.start()
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost)
        defer { proxy.stop() }
        let curl = try proxy.curlHTTPS(factory, port: nginx.ports[1])
        let line = try proxy.waitForLogLines(1).first
        expectBlocked(curl, line, violations: ["expired"], nsurl: -1201, ssl: -9814)
        withExtendedLifetime(nginx) {}
    }
}
