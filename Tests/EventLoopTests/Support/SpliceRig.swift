internal import COpenSSL
import Dispatch
import Foundation
import Glibc
import POSIX
import Testing

@testable import EventLoop

/// A connected loopback TCP pair: `[0]` for a SocketStream, `[1]` for the test thread (blocking, with
/// a 20 s receive limit so a broken relay fails the test instead of hanging it).
func loopbackPair() throws -> (Int32, Int32) {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    defer { close(listener) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
            bind(listener, address, length) == 0 && listen(listener, 1) == 0
                && getsockname(listener, address, &length) == 0
        }
    }
    guard bound else { throw EventError("binding a loopback listener") }
    let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    let connected = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) == 0 }
    }
    let accepted = accept(listener, nil, nil)
    if accepted >= 0 { _ = fcntl(accepted, F_SETFD, FD_CLOEXEC) }
    guard connected, accepted >= 0 else { throw EventError("connecting a loopback pair") }
    var limit = timeval(tv_sec: 20, tv_usec: 0)
    setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    return (accepted, client)
}

/// Sends all of `bytes` (blocking); false when the socket refused.
@discardableResult
func sendAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let sent = send(descriptor, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
        if sent <= 0 { return false }
        offset += sent
    }
    return true
}

func sendAll(_ descriptor: Int32, _ text: String) {
    Array(text.utf8).withUnsafeBytes { _ = sendAll(descriptor, $0) }
}

/// Reads until the peer's end of stream (or an error or the receive limit): the bytes.
func receiveAll(_ descriptor: Int32) -> [UInt8] {
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = recv(descriptor, &chunk, chunk.count, 0)
        if count <= 0 { return received }
        received += chunk[..<count]
    }
}

/// `total` bytes of a pattern that differs from one 1 MiB block to the next (`seed` tells the two
/// directions apart), sent in 1 MiB writes and hashed on the way; then the write side is shut.
/// Returns the SHA-256.
func sendPattern(_ descriptor: Int32, total: Int, seed: UInt64) -> [UInt8] {
    var hash = SHA256Stream()
    var block = [UInt8](repeating: 0, count: 1 << 20)
    var state = seed | 1
    var sent = 0
    while sent < total {
        block.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for index in words.indices {
                // xorshift64: cheap, and no block repeats another.
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                words[index] = state
            }
        }
        let count = min(block.count, total - sent)
        let ok = block.withUnsafeBytes { raw in
            hash.update(UnsafeRawBufferPointer(rebasing: raw[..<count]))
            return sendAll(descriptor, UnsafeRawBufferPointer(rebasing: raw[..<count]))
        }
        if !ok { break }
        sent += count
    }
    shutdown(descriptor, Int32(SHUT_WR))
    return hash.finish()
}

/// Runs `body` on a thread of its own (blocking socket work must not wait for a place in
/// Dispatch's pool, which the suite's other tests may hold): the returned group is left when it ends.
func onThread(_ group: DispatchGroup, _ body: @escaping @Sendable () -> Void) {
    group.enter()
    Thread.detachNewThread {
        body()
        group.leave()
    }
}

/// Waits for a state the test cannot be told about directly: polls `condition` every 10 ms until
/// it holds or `timeout` seconds pass (generous: it only matters when the test is failing), and
/// returns whether it held. TLSTestSupport's `eventually`, which this target does not link.
func eventually(timeout: Double = 30, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    while true {
        if condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        usleep(10_000)
    }
}

/// Waits until `descriptor` has at least `count` bytes to read (at most 30 s); returns whether it has.
func awaitReadable(_ descriptor: Int32, atLeast count: Int) -> Bool {
    eventually {
        var available: Int32 = 0
        return ioctl(descriptor, UInt(FIONREAD), &available) == 0 && Int(available) >= count
    }
}

/// Reads until the end of stream, hashing: the count and the SHA-256.
func receiveHashing(_ descriptor: Int32, delay: Duration = .zero) -> (count: Int, sha256: [UInt8]) {
    var hash = SHA256Stream()
    var chunk = [UInt8](repeating: 0, count: 1 << 20)
    var total = 0
    while true {
        let count = recv(descriptor, &chunk, chunk.count, 0)
        if count <= 0 { break }
        chunk.withUnsafeBytes { hash.update(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        total += count
    }
    return (total, hash.finish())
}

/// SHA-256 through OpenSSL's EVP interface.
struct SHA256Stream {
    private let context: OpaquePointer

    init() {
        context = EVP_MD_CTX_new()
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) { EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) }

    func finish() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        EVP_MD_CTX_free(context)
        return digest
    }
}

/// What a relay's loop reports to the test thread.
final class RelayReport: Sendable {
    struct State: Sendable {
        var ending: SpliceRelay.Ending?
        var bytesToSecond = 0
        var bytesToFirst = 0
        var splicing: [Bool] = []
        /// Samples of the second connection's `hasBytesWaiting`, every 20 ms while the relay runs.
        var secondWaiting: [Bool] = []
        /// The most the relay's pipe held for the second connection at a sample.
        var mostInPipe = 0
        /// The largest pipe each direction had while sampled (first → second, second → first).
        var largestPipes: [Int] = [0, 0]
        /// CPU seconds the relay's loop thread spent from the start to the end.
        var loopCPU = 0.0
    }

    let state = Locked(State())
    let ended = DispatchSemaphore(value: 0)

    var snapshot: State { state.withLock { $0 } }

    /// Waits for the relay's end; nil after 30 s.
    func waitForEnd() -> State? { ended.wait(timeout: .now() + 30) == .success ? snapshot : nil }
}

/// A relay on a loop of its own between two sockets: `setUp` runs on the loop with both
/// connections before the relay starts (to buffer bytes first, say). The connections are closed
/// when the relay ends.
func startRelay(
    first: Int32, second: Int32, method: SpliceRelay.Method = .splice, refusingAfter: Int? = nil,
    pipeCapacity: Int = SpliceRelay.defaultPipeCapacity,
    setUp: @escaping @Sendable (SocketStream, SocketStream) -> Void = { _, _ in }
) throws -> (EventLoopThread, RelayReport) {
    let report = RelayReport()
    let (loop, _) = try EventLoopThread.start { base in
        let a = try SocketStream(base: base, descriptor: first)
        let b = try SocketStream(base: base, descriptor: second)
        setUp(a, b)
        let relay = SpliceRelay(first: a, second: b, method: method, pipeCapacity: pipeCapacity)
        relay.refusesSplicingAfter = refusingAfter
        let keep = RigKeepAlive(relay)
        let cpuAtStart = threadCPUSeconds()
        relay.onEnd = { relay, ending in
            let cpu = threadCPUSeconds() - cpuAtStart
            report.state.withLock {
                $0.loopCPU = cpu
                $0.ending = ending
                $0.bytesToSecond = relay.bytesToSecond
                $0.bytesToFirst = relay.bytesToFirst
            }
            relay.first.close()
            relay.second.close()
            report.ended.signal()
        }
        relay.start()
        report.state.withLock { $0.splicing = relay.splicing }
        // Samples what the idle timer would read, every 20 ms while the relay runs.
        keep.sampler = try EventLoop.Timer(base: base) { [weak keep] in
            guard let keep, !keep.relay.isClosed else { return }
            let waiting = keep.relay.second.hasBytesWaiting
            let inPipe = keep.relay.second.splicedBytesWaiting
            report.state.withLock {
                $0.secondWaiting.append(waiting)
                $0.mostInPipe = max($0.mostInPipe, inPipe)
                for (index, flow) in keep.relay.flows.enumerated() where index < 2 {
                    $0.largestPipes[index] = max($0.largestPipes[index], flow.pipe?.capacity ?? 0)
                }
            }
            keep.sampler?.schedule(after: .milliseconds(20))
        }
        keep.sampler?.schedule(after: .milliseconds(20))
        return (keepAlive: keep, info: 0)
    }
    return (loop, report)
}

/// CPU seconds the calling thread has used.
func threadCPUSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// What the relay's loop keeps alive: the relay and its sampler.
final class RigKeepAlive {
    let relay: SpliceRelay
    var sampler: EventLoop.Timer?
    init(_ relay: SpliceRelay) { self.relay = relay }
}
