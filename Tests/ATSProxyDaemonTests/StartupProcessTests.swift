import Foundation
import Glibc
import TLSTestSupport
import Testing

/// Starting a second atsproxy where one already runs, as a user does: what is in use is said in one
/// line, and the live view's default port being taken does not stop the proxy.
@Suite("atsproxy starting beside another", .startsProcesses(timeLimit: .seconds(60)))
struct StartupProcessTests {
    /// A socket listening on 127.0.0.1 at `port` (0: any), and the port it has; nil when the port is
    /// taken already.
    static func hold(port: UInt16 = 0) -> (descriptor: Int32, port: UInt16)? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(descriptor, 8) == 0 else {
            close(descriptor)
            return nil
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return (descriptor, UInt16(bigEndian: address.sin_port))
    }

    @Test("a proxy port in use: one line naming the address and what to do, exit 1, no usage text")
    func portInUse() throws {
        let held = try #require(Self.hold())
        defer { close(held.descriptor) }
        let fixture = try ConfigFixture()
        let result = try runCommand(
            DaemonProcess.executable,
            [
                "--listen", "127.0.0.1:\(held.port)", "--web-listen", "off", "--control-socket",
                fixture.path("control.sock"), "--log-file", fixture.path("log.jsonl"),
            ])
        #expect(result.status == 1, "\(result.standardError)")
        let lines = result.standardError.split(separator: "\n").filter { !$0.isEmpty }
        #expect(lines.count == 1, "\(result.standardError)")
        let line = try #require(lines.first)
        #expect(line.contains("listening on 127.0.0.1:\(held.port)"))
        #expect(line.contains("in use") && line.contains("--listen ADDR:PORT"))
        #expect(!result.standardError.contains("Usage"))
    }

    @Test("the live view's default port taken (a second proxy): the proxy starts without it and says so")
    func defaultWebPortTaken() throws {
        // Held here, or taken already by something else: either way the default is not free.
        let held = Self.hold(port: 8081)
        defer { if let held { close(held.descriptor) } }
        let fixture = try ConfigFixture()
        // A config file without web-listen, so that the daemon uses its default.
        let config = try fixture.write("atsproxy.conf", "listen = 127.0.0.1:0\n")
        let daemon = try DaemonProcess(directory: fixture.directory, ["--config", config])
        defer { _ = daemon.terminate() }
        #expect(eventually { daemon.standardError.contains("the live view is off") }, "\(daemon.standardError)")
        #expect(daemon.standardError.contains("--web-listen"), "it says how to choose another address")
    }
}
