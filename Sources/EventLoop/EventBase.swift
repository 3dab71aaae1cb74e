internal import CLibevent

/// libevent must know about pthreads before the first base exists, so that `stop()` may be called
/// from another thread (event_base_loopbreak takes the base's lock). Run once, lazily.
private let threadingReady: Bool = evthread_use_pthreads() == 0

/// One event base: the single owner of its `event_base`, freed in `deinit`. It belongs to the thread
/// that runs it; everything created on it (listeners, connections, timers) belongs there too.
package final class EventBase {
    let raw: OpaquePointer
    /// Where connections on this base read first (see `SocketStream.receive()`): one buffer for all,
    /// since they all run on this base's thread, one callback at a time; nothing stays in it
    /// between reads.
    let readScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    package init() throws(EventError) {
        guard threadingReady else { throw EventError("evthread_use_pthreads", errno: 0) }
        // The epoll changelist folds the several adds and deletes one descriptor sees in one loop
        // turn (enable reading, set a timeout, disable writing…) into one epoll_ctl. Its caveat,
        // descriptors shared through dup(), does not arise: every socket here has one owner.
        guard let config = event_config_new() else { throw EventError("event_config_new") }
        defer { event_config_free(config) }
        event_config_set_flag(config, Int32(EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST.rawValue))
        guard let base = event_base_new_with_config(config) else { throw EventError("event_base_new_with_config") }
        raw = base
    }

    deinit {
        event_base_free(raw)
        readScratch.deallocate()
    }

    /// Runs callbacks until the loop is stopped, even while nothing is pending (a loop that only
    /// waits for inbox messages from other threads has no event to wait on in libevent's eyes).
    package func run() {
        event_base_loop(raw, EVLOOP_NO_EXIT_ON_EMPTY)
    }

    /// A handle that may stop this loop from any thread.
    package var stopper: LoopStopper { LoopStopper(base: raw) }
}

/// Stops a running loop from another thread.
///
/// `@unchecked Sendable`: it holds only the base's pointer and calls `event_base_loopbreak`, which is
/// thread-safe once libevent uses pthreads (``EventBase`` makes sure of that). The base must outlive
/// every use, which the loop's owner guarantees by stopping the loop before releasing the base.
package struct LoopStopper: @unchecked Sendable {
    let base: OpaquePointer

    package func stop() { event_base_loopbreak(base) }
}
