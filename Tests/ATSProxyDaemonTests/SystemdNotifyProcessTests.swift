import Foundation
import TLSTestSupport
import Testing

/// The real `atsproxy` with `$NOTIFY_SOCKET` set, as systemd starts a Type=notify service.
@Suite("atsproxy tells systemd", .startsProcesses(timeLimit: .seconds(60)))
struct SystemdNotifyProcessTests {
    @Test("READY=1 comes once the port accepts connections; SIGTERM gives STOPPING=1", arguments: [false, true])
    func readyThenStopping(abstract: Bool) throws {
        let factory = try CertificateFactory()
        let notify = try NotifySocket(directory: factory.directory, abstract: abstract)
        let daemon = try DaemonProcess(
            directory: factory.directory, ["--listen", "127.0.0.1:0", "--system-roots", "off", "--threads", "2"],
            environment: ["NOTIFY_SOCKET": notify.address])

        let ready = NotifySocket.fields(try #require(notify.receive(), "no message on \(notify.address)"))
        #expect(ready.first?.key == "READY" && ready.first?.value == "1", "\(ready)")
        let status = try #require(ready.first { $0.key == "STATUS" }?.value)
        #expect(
            status.hasPrefix("listening on 127.0.0.1:\(daemon.port); enforce mode; policy the ATS defaults"),
            "\(status)")
        // Connected at once, with no retry: the listeners were bound before READY=1 was sent.
        let client = try #require(
            connectLoopback(port: daemon.port), "READY=1 came before port \(daemon.port) accepted")
        close(client)
        // Nothing else is said while the daemon runs.
        #expect(notify.receive(timeout: 0.2) == nil)

        kill(daemon.process.processIdentifier, SIGTERM)
        let stopping = NotifySocket.fields(try #require(notify.receive(), "no STOPPING=1"))
        #expect(stopping.first?.key == "STOPPING" && stopping.first?.value == "1", "\(stopping)")
        #expect(
            stopping.contains { $0.key == "STATUS" && $0.value.hasPrefix("stopping (signal \(SIGTERM))") },
            "\(stopping)")
        #expect(daemon.terminate() == 0)
    }

    @Test("a notify socket that is not there is reported on stderr, and the proxy serves anyway")
    func missingSocket() throws {
        let factory = try CertificateFactory()
        let daemon = try DaemonProcess(
            directory: factory.directory, ["--listen", "127.0.0.1:0", "--system-roots", "off", "--threads", "1"],
            environment: ["NOTIFY_SOCKET": factory.path("nobody-listens.sock")])
        let response = String(
            decoding: exchangeRaw(port: daemon.port, Array("OPTIONS * HTTP/1.1\r\n\r\n".utf8)), as: UTF8.self)
        #expect(response.hasPrefix("HTTP/1.1 "), "\(response)")
        #expect(daemon.terminate() == 0)
        #expect(
            daemon.standardError.contains("cannot notify systemd: sendto: No such file or directory"),
            "\(daemon.standardError)")
    }
}
