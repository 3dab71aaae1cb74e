import Dispatch
import Glibc
import POSIX
import Synchronization
import Testing

@testable import EventLoop

/// A relay between two loopback TCP connections, each with a peer on the test's threads:
/// peer A ⇄ first ⇄ relay ⇄ second ⇄ peer B.
@Suite("Event loop: splicing a tunnel's bytes")
struct SpliceRelayTests {
    /// Both methods: splice(2), and the evbuffer copies it falls back to.
    static let methods: [SpliceRelay.Method] = [.splice, .copy]

    @Test(
        "64 MiB each way at once arrive byte for byte (SHA-256), counted, and both ends are passed on",
        arguments: methods)
    func bulkBothWays(method: SpliceRelay.Method) throws {
        let (first, peerA) = try loopbackPair()
        let (second, peerB) = try loopbackPair()
        defer {
            close(peerA)
            close(peerB)
        }
        let (loop, report) = try startRelay(first: first, second: second, method: method)
        defer { loop.stop() }
        let total = 64 << 20
        let results = Locked<[String: [UInt8]]>([:])
        let group = DispatchGroup()
        let work: [(String, @Sendable () -> [UInt8])] = [
            ("sent up", { @Sendable in sendPattern(peerA, total: total, seed: 1) }),
            ("sent down", { @Sendable in sendPattern(peerB, total: total, seed: 2) }),
            (
                "received up",
                { @Sendable in
                    let r = receiveHashing(peerB)
                    return r.count == total ? r.sha256 : []
                }
            ),
            (
                "received down",
                { @Sendable in
                    let r = receiveHashing(peerA)
                    return r.count == total ? r.sha256 : []
                }
            ),
        ]
        for (name, work) in work {
            onThread(group) {
                let value = work()
                results.withLock { $0[name] = value }
            }
        }
        #expect(group.wait(timeout: .now() + 60) == .success)
        let hashes = results.withLock { $0 }
        #expect(hashes["sent up"] != nil && hashes["sent up"] == hashes["received up"])
        #expect(hashes["sent down"] != nil && hashes["sent down"] == hashes["received down"])
        let state = try #require(report.waitForEnd())
        #expect(state.ending == .finished)
        #expect(state.bytesToSecond == total && state.bytesToFirst == total)
        #expect(state.splicing == (method == .splice ? [true, true] : [false, false]))
    }

    @Test(
        "a reader that stops: the source stops being read, the pipe's bytes count as waiting, and all arrive once it reads",
        arguments: methods)
    func slowReader(method: SpliceRelay.Method) throws {
        let (first, peerA) = try loopbackPair()
        let (second, peerB) = try loopbackPair()
        defer {
            close(peerA)
            close(peerB)
        }
        let (loop, report) = try startRelay(first: first, second: second, method: method)
        defer { loop.stop() }
        let total = 64 << 20
        let sent = Atomic<Int>(0)
        /// Whether the sender is inside a send (blocked there, once the buffers are full).
        let sending = Atomic<Bool>(false)
        let sender = DispatchGroup()
        let sentHash = Locked<[UInt8]>([])
        onThread(sender) {
            // Counted per 64 KiB, to see where the sender blocks.
            var hash = SHA256Stream()
            var block = [UInt8](repeating: 0, count: 65_536)
            var offset = 0
            while offset < total {
                for index in block.indices {
                    block[index] = UInt8(truncatingIfNeeded: (offset + index) &* 31 &+ (offset >> 16))
                }
                let ok = block.withUnsafeBytes { raw in
                    hash.update(raw)
                    sending.store(true, ordering: .relaxed)
                    defer { sending.store(false, ordering: .relaxed) }
                    return sendAll(peerA, raw)
                }
                if !ok { break }
                offset += block.count
                sent.store(offset, ordering: .relaxed)
            }
            shutdown(peerA, Int32(SHUT_WR))
            let digest = hash.finish()
            sentHash.withLock { $0 = digest }
        }
        // Peer B reads nothing for a while: the sender must stall at what the kernel buffers hold.
        // Stalled is counted on the relay's own clock, its samples (one per 20 ms its loop runs),
        // not the wall clock, which a busy machine stretches: the sender sits in a send, and its
        // count stays put while the relay's loop takes 5 samples, each with bytes waiting for peer B.
        func samples() -> Int { report.snapshot.secondWaiting.count }
        var mark = (sent: -1, samples: 0)
        var stalledAt = 0
        let stalled = eventually {
            let now = sent.load(ordering: .relaxed)
            let taken = samples()
            guard now == mark.sent, now > 0, sending.load(ordering: .relaxed) else {
                mark = (now, taken)
                return false
            }
            stalledAt = now
            return taken - mark.samples >= 5 && report.snapshot.secondWaiting.suffix(5).allSatisfy { $0 }
        }
        #expect(
            stalled && stalledAt < 24 << 20, "the sender stalls at what the sockets and the pipe hold: \(stalledAt)")
        // Nothing happening is the point here: the relay's loop runs 300 ms more (15 samples) and
        // must read nothing more from the source meanwhile.
        let later = samples() + 15
        #expect(eventually { samples() >= later }, "the relay's loop stopped sampling")
        #expect(sent.load(ordering: .relaxed) == stalledAt, "nothing more was read from the source")
        let waiting = report.snapshot.secondWaiting
        #expect(waiting.suffix(5).allSatisfy { $0 } && !waiting.isEmpty, "bytes wait for peer B: \(waiting.suffix(5))")
        if method == .splice {
            #expect(report.snapshot.mostInPipe > 0, "the pipe held bytes for peer B, and they counted as waiting")
        }

        let received = receiveHashing(peerB)
        #expect(sender.wait(timeout: .now() + 30) == .success)
        #expect(received.count == total)
        #expect(received.sha256 == sentHash.withLock { $0 })
        sendAll(peerB, "")
        shutdown(peerB, Int32(SHUT_WR))
        let state = try #require(report.waitForEnd())
        #expect(state.ending == .finished)
        #expect(state.bytesToSecond == total && state.bytesToFirst == 0)
    }

    @Test(
        "an end from either side is passed on once its bytes are delivered, and the other way goes on",
        arguments: methods)
    func halfClose(method: SpliceRelay.Method) throws {
        for firstToEnd in [true, false] {
            let (first, peerA) = try loopbackPair()
            let (second, peerB) = try loopbackPair()
            defer {
                close(peerA)
                close(peerB)
            }
            let (loop, report) = try startRelay(first: first, second: second, method: method)
            defer { loop.stop() }
            let (ender, other) = firstToEnd ? (peerA, peerB) : (peerB, peerA)
            sendAll(ender, "last words")
            shutdown(ender, Int32(SHUT_WR))
            #expect(
                String(decoding: receiveAll(other), as: UTF8.self) == "last words", "the end arrived after the bytes")
            // The other way is still open.
            sendAll(other, "still here")
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = recv(ender, &buffer, buffer.count, 0)
            #expect(count == 10 && String(decoding: buffer[..<max(0, count)], as: UTF8.self) == "still here")
            #expect(report.snapshot.ending == nil, "one end does not end the relay")
            shutdown(other, Int32(SHUT_WR))
            #expect(receiveAll(ender).isEmpty)
            let state = try #require(report.waitForEnd())
            #expect(state.ending == .finished)
            let (up, down) = firstToEnd ? (10, 10) : (10, 10)
            #expect(state.bytesToSecond == up && state.bytesToFirst == down)
        }
    }

    @Test("a peer that resets its connection ends the relay with an error on its side", arguments: methods)
    func peerReset(method: SpliceRelay.Method) throws {
        signal(SIGPIPE, SIG_IGN)
        let (first, peerA) = try loopbackPair()
        let (second, peerB) = try loopbackPair()
        defer { close(peerA) }
        let (loop, report) = try startRelay(first: first, second: second, method: method)
        defer { loop.stop() }
        sendAll(peerA, "hello")
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(recv(peerB, &buffer, buffer.count, 0) == 5)
        // SO_LINGER 0: close sends a reset.
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(peerB, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        // No pause for the reset to land: whether the relay meets it reading or writing "anyone?",
        // it fails on the second connection.
        close(peerB)
        sendAll(peerA, "anyone?")
        let state = try #require(report.waitForEnd())
        guard case .failed(.second, .error(let code)) = state.ending else {
            Issue.record("\(String(describing: state.ending))")
            return
        }
        #expect([ECONNRESET, EPIPE].contains(code), "\(code)")
        // The relay closed the first connection's socket: peer A sees the end.
        #expect(receiveAll(peerA).isEmpty)
    }

    @Test(
        "bytes buffered before the relay starts go first, in order, both in the input and in the output",
        arguments: methods)
    func bufferedBytesFirst(method: SpliceRelay.Method) throws {
        let (first, peerA) = try loopbackPair()
        let (second, peerB) = try loopbackPair()
        defer {
            close(peerA)
            close(peerB)
        }
        sendAll(peerA, "read before; ")
        #expect(awaitReadable(first, atLeast: 13), "the bytes never reached the first connection")
        let (loop, report) = try startRelay(first: first, second: second, method: method) { a, _ in
            a.readImmediately()  // "read before; " now sits in the first connection's input.
            // Queued for peer A and not written yet: the relay must flush it before splicing.
            Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8).withUnsafeBytes { a.queue($0) }
        }
        defer { loop.stop() }
        sendAll(peerA, "sent after")
        shutdown(peerA, Int32(SHUT_WR))
        sendAll(peerB, "server speaks")
        shutdown(peerB, Int32(SHUT_WR))
        #expect(String(decoding: receiveAll(peerB), as: UTF8.self) == "read before; sent after")
        #expect(
            String(decoding: receiveAll(peerA), as: UTF8.self)
                == "HTTP/1.1 200 Connection established\r\n\r\nserver speaks")
        let state = try #require(report.waitForEnd())
        #expect(state.ending == .finished)
        #expect(state.bytesToSecond == 23 && state.bytesToFirst == 13)
    }

    @Test(
        "a splice the kernel refuses mid-stream falls back to copies, the pipe's bytes first: 16 MiB arrive byte for byte"
    )
    func fallbackMidStream() throws {
        let (first, peerA) = try loopbackPair()
        let (second, peerB) = try loopbackPair()
        defer {
            close(peerA)
            close(peerB)
        }
        let (loop, report) = try startRelay(first: first, second: second, refusingAfter: 1 << 20)
        defer { loop.stop() }
        let total = 16 << 20
        let results = Locked<[[UInt8]]>([])
        let group = DispatchGroup()
        onThread(group) {
            let hash = sendPattern(peerA, total: total, seed: 3)
            results.withLock { $0.append(hash) }
        }
        let received = receiveHashing(peerB)
        #expect(group.wait(timeout: .now() + 30) == .success)
        #expect(received.count == total)
        #expect(results.withLock { $0 } == [received.sha256])
        shutdown(peerB, Int32(SHUT_WR))
        let state = try #require(report.waitForEnd())
        #expect(state.ending == .finished)
        #expect(state.bytesToSecond == total)
        #expect(state.splicing == [true, true], "it started by splicing")
    }

    @Test("a bulk direction's pipe grows from 64 KiB to 256 KiB; the other, with nothing to move, keeps its size")
    func bulkPipeGrows() throws {
        let (first, peerA) = try loopbackPair()
        let (second, peerB) = try loopbackPair()
        defer {
            close(peerA)
            close(peerB)
        }
        let (loop, report) = try startRelay(first: first, second: second)
        defer { loop.stop() }
        let total = 64 << 20
        let group = DispatchGroup()
        let sent = Locked<[UInt8]>([])
        onThread(group) {
            let hash = sendPattern(peerA, total: total, seed: 4)
            sent.withLock { $0 = hash }
        }
        let received = receiveHashing(peerB, delay: .milliseconds(1))
        #expect(group.wait(timeout: .now() + 30) == .success)
        #expect(received.count == total && received.sha256 == sent.withLock { $0 })
        shutdown(peerB, Int32(SHUT_WR))
        let state = try #require(report.waitForEnd())
        #expect(state.ending == .finished)
        // Grown unless other tests' grown pipes hold the whole budget at the time, or the user's
        // pipe quota refuses it: then it keeps its size, which is what matters.
        #expect(
            state.largestPipes[0] == SplicePipe.grownCapacity || state.largestPipes[0] == SplicePipe.defaultCapacity)
        #expect(
            state.largestPipes[1] == SplicePipe.defaultCapacity, "nothing filled the pipe back: \(state.largestPipes)")
    }

    @Test("pipes grow only within the process's budget, and give it back when freed")
    func growthBudget() throws {
        var pipes: [SplicePipe] = []
        var grown = 0
        let most = SplicePipe.growthBudget / (SplicePipe.grownCapacity - SplicePipe.defaultCapacity)
        for _ in 0..<(most + 8) {
            let pipe = try SplicePipe()
            if pipe.grow(to: SplicePipe.grownCapacity) {
                grown += 1
                #expect(pipe.capacity == SplicePipe.grownCapacity)
                #expect(!pipe.grow(to: 2 * SplicePipe.grownCapacity), "a pipe grows once")
            } else {
                #expect(pipe.capacity == SplicePipe.defaultCapacity)
            }
            #expect(SplicePipe.grownBytesInUse <= SplicePipe.growthBudget)
            pipes.append(pipe)
        }
        #expect(grown <= most, "\(grown) pipes grew, the budget allows \(most)")
        let before = SplicePipe.grownBytesInUse
        pipes.removeAll()
        // Other tests may grow or free pipes meanwhile; ours took `grown` shares and gave them back.
        #expect(SplicePipe.grownBytesInUse <= before)
    }
}
