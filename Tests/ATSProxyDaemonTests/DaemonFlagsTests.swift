import ATSPolicy
import ATSProxyDaemon
import ArgumentParser
import ProxyCore
import Testing

@Suite("atsproxy flags")
struct DaemonFlagsTests {
    @Test("defaults: 127.0.0.1:8080, enforce, ATS defaults")
    func defaults() throws {
        let command = try DaemonCommand.parse([])
        #expect(command.listenAddresses == ["127.0.0.1:8080"])
        #expect(command.mode == .enforce)
        #expect(command.policyPath == nil)
    }

    @Test("bad values are refused with the flag named", arguments: [
        (["--listen", "nonsense"], "--listen nonsense"),
        (["--allow-client", "10.0.0.0/33"], "--allow-client 10.0.0.0/33"),
        (["--verdict-ttl", "-1"], "--verdict-ttl"),
        (["--threads", "0"], "--threads"),
        (["--mode", "observe"], "observe"),
        (["--os-profile", "ios99"], "ios99"),
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
        let command = try DaemonCommand.parse([
            "--listen", "127.0.0.1:0", "--listen", "[::1]:0", "--allow-client", "10.0.0.0/8", "--ca-file", "a.pem",
            "--ca-file", "b.pem", "--mode", "report",
        ])
        #expect(command.listenAddresses == ["127.0.0.1:0", "[::1]:0"])
        #expect(command.mode == .report)
    }
}
