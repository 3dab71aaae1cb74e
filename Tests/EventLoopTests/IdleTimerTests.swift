import Dispatch
import EventLoop
import Glibc
import POSIX
import Testing

/// The idle timer on real sockets: it fires only once no byte has moved through what it watches,
/// either way, for its limit.
@Suite("Event loop: idle timer")
struct IdleTimerTests {
    /// A connection on a socket pair, watched by an idle timer with `limit` on a loop of its own;
    /// `prepare` runs on the loop before the timer starts. Returns the loop, the test's end of the
    /// pair and a semaphore signalled (once) when the timer fires.
    final class Rig: Sendable {
        let loop: EventLoopThread
        let peer: Int32
        let fired = DispatchSemaphore(value: 0)
        private let stamp = Stamp()

        final class Stamp: Sendable {
            let time = Locked<ContinuousClock.Instant?>(nil)
            let ending = Locked<IdleTimer.Ending?>(nil)
        }

        var firedTime: ContinuousClock.Instant? { stamp.time.withLock { $0 } }
        var ending: IdleTimer.Ending? { stamp.ending.withLock { $0 } }

        init(
            limit: Duration, stallLimit: Duration? = nil, stopAtOnce: Bool = false,
            prepare: @escaping @Sendable (SocketStream) -> Void = { _ in }
        ) throws {
            var pair: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else {
                throw EventError("socketpair")
            }
            peer = pair[1]
            let ours = pair[0]
            let (stamp, fired) = (stamp, fired)
            (loop, _) = try EventLoopThread.start { base in
                let connection = try SocketStream(base: base, descriptor: ours)
                connection.onReadable = { $0.discardInput($0.availableBytes) }
                prepare(connection)
                let timer = try IdleTimer(base: base)
                timer.start(limit: limit, stallLimit: stallLimit ?? limit, watching: [connection]) { ending in
                    stamp.time.withLock { $0 = ContinuousClock.now }
                    stamp.ending.withLock { $0 = ending }
                    fired.signal()
                }
                if stopAtOnce { timer.stop() }
                return (keepAlive: Holder(connection, timer), info: 0)
            }
        }

        deinit {
            loop.stop()
            close(peer)
        }
    }

    final class Holder {
        let connection: SocketStream
        let timer: IdleTimer
        init(_ connection: SocketStream, _ timer: IdleTimer) {
            self.connection = connection
            self.timer = timer
        }
        deinit { connection.close() }
    }

    @Test("with nothing moving it fires at its limit, not before")
    func firesWhenSilent() throws {
        let start = ContinuousClock.now
        let rig = try Rig(limit: .milliseconds(300))
        #expect(rig.fired.wait(timeout: .now() + 5) == .success)
        let after = try #require(rig.firedTime) - start
        #expect(after >= .milliseconds(280) && after < .seconds(2), "fired after \(after)")
        #expect(rig.ending == .idle)
    }

    @Test(
        "bytes waiting for a reader that takes none are a stall, not idleness: it ends at the stall limit, as stalled")
    func stall() throws {
        let start = ContinuousClock.now
        // Far more than a socket pair's buffers: most of it waits in the output buffer.
        let rig = try Rig(limit: .milliseconds(300), stallLimit: .milliseconds(1500)) {
            $0.write([UInt8](repeating: 1, count: 4 << 20))
        }
        #expect(rig.fired.wait(timeout: .now() + 5) == .success)
        let after = try #require(rig.firedTime) - start
        #expect(after >= .milliseconds(1400) && after < .seconds(3), "fired after \(after)")
        #expect(rig.ending == .stalled)
    }

    @Test("bytes arriving one way keep it from firing; it fires a limit after the last of them")
    func readsCount() throws {
        let rig = try Rig(limit: .milliseconds(300))
        for _ in 0..<10 {
            usleep(100_000)  // The scenario: bytes arriving paced, each well inside the limit.
            _ = send(rig.peer, "x", 1, Int32(MSG_NOSIGNAL))
        }
        let last = ContinuousClock.now
        #expect(rig.firedTime == nil, "fired while bytes were arriving")
        #expect(rig.fired.wait(timeout: .now() + 5) == .success)
        let after = try #require(rig.firedTime) - last
        #expect(after >= .milliseconds(250) && after < .seconds(2), "fired \(after) after the last byte")
    }

    @Test("bytes leaving one way, as the peer takes them, keep it from firing too")
    func writesCount() throws {
        let total = 2 * 1024 * 1024
        let rig = try Rig(limit: .milliseconds(300)) { $0.write([UInt8](repeating: 7, count: total)) }
        var received = 0
        var buffer = [UInt8](repeating: 0, count: 32 * 1024)
        let start = ContinuousClock.now
        while received < total {
            usleep(10_000)  // The scenario: a slow reader, taking 32 KiB every 10 ms.
            let got = recv(rig.peer, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if got > 0 { received += got }
            guard ContinuousClock.now - start < .seconds(20) else { break }
        }
        let last = ContinuousClock.now
        #expect(received == total)
        // The transfer lasted several limits: the reader took 32 KiB every 10 ms.
        #expect(last - start > .milliseconds(600), "the transfer took only \(last - start)")
        #expect(rig.firedTime == nil, "fired while bytes were leaving")
        #expect(rig.fired.wait(timeout: .now() + 5) == .success)
    }

    @Test("stopped, it never fires")
    func stopped() throws {
        let rig = try Rig(limit: .milliseconds(200), stopAtOnce: true)
        #expect(rig.fired.wait(timeout: .now() + 1) == .timedOut)
    }
}
