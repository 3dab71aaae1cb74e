import EventLoop
import Foundation
import Glibc
import POSIX
import Testing

/// A connection the firewall redirected keeps its original destination, which the transparent
/// listener (issue 30) reads with SO_ORIGINAL_DST. The test makes its own network namespace, a veth
/// pair in it and an nftables REDIRECT rule there, and deletes the namespace afterwards: nothing
/// touches the host's routing. It needs root and nft.
@Suite("SO_ORIGINAL_DST after an nftables REDIRECT in a namespace")
struct OriginalDestinationTests {
    static let usable = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/nft")

    @Test("a redirected IPv4 connection reports the address and port the client dialled", .enabled(if: usable))
    func redirectedIPv4() throws {
        let name = "atsproxy-od-\(getpid())"
        try run(["ip", "netns", "add", name])
        defer { _ = try? run(["ip", "netns", "del", name]) }
        try run([
            "ip", "netns", "exec", name, "sh", "-ec",
            """
            ip link set lo up
            ip link add od0 type veth peer name od1
            ip addr add 10.255.0.2/24 dev od0
            ip link set od0 up; ip link set od1 up
            nft add table ip od
            nft add chain ip od out '{ type nat hook output priority -100; }'
            nft add rule ip od out ip daddr 10.255.0.1 tcp dport 443 redirect to :4433
            """,
        ])
        let found = try inNamespace(name) { () throws(EventError) -> SocketAddress in
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(listener) }
            var on: Int32 = 1
            setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            var local = Self.address("0.0.0.0", 4433)
            guard Self.call({ bind(listener, $0, $1) }, &local) == 0, listen(listener, 4) == 0 else {
                throw EventError("listening in the namespace")
            }
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(client) }
            var remote = Self.address("10.255.0.1", 443)
            guard Self.call({ connect(client, $0, $1) }, &remote) == 0 else { throw EventError("connecting") }
            let accepted = accept(listener, nil, nil)
            guard accepted >= 0 else { throw EventError("accepting") }
            defer { close(accepted) }
            return try SocketAddress.originalDestination(of: accepted)
        }
        #expect(found.host == "10.255.0.1")
        #expect(found.port == 443)
    }

    private static func address(_ host: String, _ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host)
        address.sin_port = port.bigEndian
        return address
    }

    private static func call(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32, _ address: inout sockaddr_in)
        -> Int32
    {
        withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    /// Runs `body` on a thread of its own that has joined the namespace (setns changes only the
    /// calling thread, and no pooled thread may be moved), and gives back what it returned.
    private func inNamespace<Result: Sendable>(
        _ name: String, _ body: @escaping @Sendable () throws(EventError) -> Result
    ) throws -> Result {
        let outcome = Locked<Swift.Result<Result, EventError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            defer { done.signal() }
            let namespace = open("/run/netns/\(name)", O_RDONLY)
            guard namespace >= 0, Self.setns(namespace, Self.newNetworkNamespace) == 0 else {
                outcome.withLock { $0 = .failure(EventError("joining the namespace \(name)")) }
                return
            }
            close(namespace)
            let result = Swift.Result { () throws(EventError) in try body() }
            outcome.withLock { $0 = result }
        }
        thread.start()
        done.wait()
        return try #require(outcome.withLock { $0 }).get()
    }

    /// setns(2) and CLONE_NEWNET: glibc declares them only under _GNU_SOURCE, which Swift's Glibc
    /// module is built without, so the test looks the function up by name (CLONE_NEWNET is 0x40000000
    /// in <linux/sched.h>).
    private static let newNetworkNamespace: Int32 = 0x4000_0000
    private static let setns = unsafeBitCast(
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setns"), to: (@convention(c) (Int32, Int32) -> Int32).self)

    @discardableResult
    private func run(_ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(arguments.joined(separator: " "))")
        return process.terminationStatus
    }
}
