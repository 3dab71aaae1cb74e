import Dispatch
import Glibc

/// An event base running on a thread of its own (a pthread, never a Swift concurrency thread:
/// `event_base_dispatch` blocks).
///
/// Everything the loop owns is created by `setup` on the loop's thread and never leaves it; only the
/// `Info` that setup returns (a bound port, say) crosses back, once, before ``start(_:)`` returns.
/// `@unchecked Sendable` because the only state touched from two threads is written before the
/// `ready` semaphore is signalled and read after it is waited on, and ``stop()`` uses libevent's
/// thread-safe loopbreak.
package final class EventLoopThread: @unchecked Sendable {
    private let body: @Sendable (EventBase) throws -> (AnyObject, any Sendable)
    private let ready = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private var stopper: LoopStopper?
    private var info: (any Sendable)?
    private var failure: (any Error)?
    private var thread = pthread_t()
    private var stopped = false

    private init(body: @escaping @Sendable (EventBase) throws -> (AnyObject, any Sendable)) { self.body = body }

    /// Starts a loop; `setup` runs on its thread, returns what must stay alive with the loop and the
    /// information the caller needs. Throws what setup threw.
    package static func start<Info: Sendable>(
        _ setup: @escaping @Sendable (EventBase) throws -> (keepAlive: AnyObject, info: Info)
    ) throws -> (EventLoopThread, Info) {
        let loop = EventLoopThread { base in
            let (keepAlive, info) = try setup(base)
            return (keepAlive, info)
        }
        let context = Unmanaged.passRetained(loop).toOpaque()
        guard pthread_create(&loop.thread, nil, threadMain, context) == 0 else {
            Unmanaged<EventLoopThread>.fromOpaque(context).release()
            throw EventError("pthread_create")
        }
        loop.ready.wait()
        if let failure = loop.failure {
            pthread_join(loop.thread, nil)
            // Joined here: the loop's deinit must not join it a second time (undefined behaviour,
            // which AddressSanitizer stops the process for).
            loop.stopped = true
            throw failure
        }
        guard let info = loop.info as? Info else { throw EventError("starting the event loop", errno: 0) }
        return (loop, info)
    }

    /// Stops the loop and waits for its thread to finish (everything it owned is released there).
    package func stop() {
        guard !stopped else { return }
        stopped = true
        // A loopbreak that lands before the loop starts dispatching is forgotten, so repeat it until
        // the thread is done.
        while finished.wait(timeout: .now() + .milliseconds(20)) == .timedOut { stopper?.stop() }
        // The last reference may be dropped on the loop's own thread, which cannot join itself.
        if pthread_equal(thread, pthread_self()) != 0 {
            pthread_detach(thread)
        } else {
            pthread_join(thread, nil)
        }
    }

    deinit { stop() }

    fileprivate func main() {
        do {
            let base = try EventBase()
            let (keepAlive, info) = try body(base)
            self.info = info
            stopper = base.stopper
            ready.signal()
            base.run()
            // What is still open closes while its base is alive: a connection retains itself until
            // it is closed, so one left open would outlive the loop, and the base with it.
            (keepAlive as? any LoopResident)?.loopEnded()
            // The loop's objects go before the base they belong to.
            withExtendedLifetime(keepAlive) {}
        } catch {
            failure = error
            ready.signal()
        }
        finished.signal()
    }
}

/// What a loop keeps alive (``EventLoopThread/start(_:)``'s `keepAlive`) and must close when the
/// loop stops: called on the loop's thread after its last turn, with the base still alive.
package protocol LoopResident: AnyObject {
    func loopEnded()
}

private func threadMain(_ context: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let context else { return nil }
    let loop = Unmanaged<EventLoopThread>.fromOpaque(context).takeRetainedValue()
    // Signals belong to the main thread's loop (engineering notes, trap 16).
    var blocked = sigset_t()
    sigfillset(&blocked)
    pthread_sigmask(SIG_BLOCK, &blocked, nil)
    loop.main()
    return nil
}
