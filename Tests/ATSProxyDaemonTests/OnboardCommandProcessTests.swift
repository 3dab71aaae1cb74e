import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// `atsproxyctl onboard` and the banner at start, against the real daemon: a wildcard listener is
/// shown at this host's own addresses (never loopback), each with a QR code zbarimg reads back; a
/// loopback-only proxy says how to listen on the LAN.
@Suite(.startsProcesses(timeLimit: .seconds(60)))
struct OnboardCommandProcessTests {
    @Test("a wildcard listener: onboard and status name http://ADDRESS:PORT/ for this host's addresses, none loopback")
    func wildcard() throws {
        let fixture = try InterceptFixture(names: [])
        let daemon = try DaemonProcess(directory: fixture.directory, ["--listen", "0.0.0.0:0", "--threads", "1"])
        let shown = atsproxyctl("onboard", "--socket", daemon.controlSocket)
        #expect(shown.exitCode == 0, "\(shown.standardError)")
        let urls = shown.standardOutput.split(separator: "\n").filter {
            $0.hasPrefix("http://") && !$0.contains("atsproxy.test")
        }
        #expect(!urls.isEmpty || HostInterfacesForTest.nonLoopback.isEmpty, "\(shown.standardOutput)")
        for url in urls {
            #expect(url.hasSuffix(":\(daemon.port)/"))
            #expect(!url.contains("127.0.0.1"))
        }
        #expect(shown.standardOutput.contains("Live view (on the proxy's machine): http://127.0.0.1:"))
        // The same banner went to stderr at start, after the listening line.
        for url in urls { #expect(daemon.standardError.contains(String(url))) }
        let status = atsproxyctl("status", "--socket", daemon.controlSocket)
        #expect(status.standardOutput.contains("Onboarding"))
        #expect(daemon.terminate() == 0)
    }

    @Test("a loopback-only proxy: onboard says how to listen on the LAN, and draws no code")
    func loopbackOnly() throws {
        let fixture = try InterceptFixture(names: [])
        let daemon = try fixture.daemon(intercept: false)
        let shown = atsproxyctl("onboard", "--socket", daemon.controlSocket)
        #expect(shown.exitCode == 0)
        #expect(shown.standardOutput.contains("--listen 0.0.0.0:8080"))
        #expect(!shown.standardOutput.contains("▀") && !shown.standardOutput.contains("█"))
        #expect(daemon.terminate() == 0)
    }
}

/// This machine's addresses other than loopback and link-local, as `ip -o addr` lists them.
enum HostInterfacesForTest {
    static var nonLoopback: [String] {
        let result = try? runCommand("/usr/sbin/ip", ["-o", "addr", "show"])
        return (result?.standardOutput ?? "").split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard let at = fields.firstIndex(where: { $0 == "inet" || $0 == "inet6" }), at + 1 < fields.count else {
                return nil
            }
            let address = String(fields[at + 1].prefix { $0 != "/" })
            return address.hasPrefix("127.") || address == "::1" || address.hasPrefix("fe80") ? nil : address
        }
    }
}
