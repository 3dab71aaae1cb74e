import Dispatch
import EventLoop
import Glibc
import POSIX
import Synchronization
import Testing

@Suite("Loop inbox: messages from other threads")
struct LoopInboxTests {
    @Test("messages posted from many threads are all handled, on the loop's thread, in order per sender")
    func crossThread() throws {
        let received = Locked<[Int: [Int]]>([:])
        let wrongThread = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        let total = 8 * 500
        let (loop, poster) = try EventLoopThread.start { base in
            let loopThread = pthread_self()
            let count = Locked(0)
            let inbox = try LoopInbox<(sender: Int, sequence: Int)>(base: base) { message in
                if pthread_equal(pthread_self(), loopThread) == 0 { wrongThread.add(1, ordering: .relaxed) }
                received.withLock { $0[message.sender, default: []].append(message.sequence) }
                let seen = count.withLock { value -> Int in
                    value += 1
                    return value
                }
                if seen == total { done.signal() }
            }
            return (keepAlive: inbox, info: inbox.poster)
        }
        defer { loop.stop() }
        DispatchQueue.concurrentPerform(iterations: 8) { sender in
            for sequence in 0..<500 { poster.post((sender: sender, sequence: sequence)) }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(wrongThread.load(ordering: .relaxed) == 0)
        let bySender = received.withLock { $0 }
        for sender in 0..<8 { #expect(bySender[sender] == Array(0..<500)) }
    }

    @Test("posting after the loop is gone is refused, not a crash")
    func afterStop() throws {
        let (loop, poster) = try EventLoopThread.start { base in
            let inbox = try LoopInbox<Int>(base: base) { _ in }
            return (keepAlive: inbox, info: inbox.poster)
        }
        #expect(poster.post(1))
        loop.stop()
        #expect(!poster.post(2))
    }
}
