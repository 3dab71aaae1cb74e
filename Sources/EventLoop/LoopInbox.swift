internal import CLibevent
import POSIX

/// Messages to a loop from other threads (a probe finished, a reload happened): posted from anywhere,
/// handled on the loop's thread by the handler given at creation.
///
/// The inbox itself belongs to the loop; ``poster`` is the Sendable handle other threads keep.
package final class LoopInbox<Message: Sendable> {
    private let shared: InboxState<Message>
    private let handler: (Message) -> Void

    /// Creates the inbox on `base` (on the loop's thread); `handler` runs there for each message.
    package init(base: EventBase, handler: @escaping (Message) -> Void) throws(EventError) {
        self.handler = handler
        shared = InboxState()
        // The inbox outlives its event (deinit frees the event first), so an unretained context is safe.
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard let event = event_new(base.raw, -1, 0, inboxCallback, context) else { throw EventError("event_new") }
        shared.open(event)
    }

    deinit { shared.close() }

    /// The handle to post with, from any thread.
    package var poster: InboxPoster<Message> { InboxPoster(shared: shared) }

    fileprivate func drain() {
        for message in shared.takeAll() { handler(message) }
    }
}

/// Posts to a ``LoopInbox`` from any thread. Posting after the inbox is gone does nothing.
package struct InboxPoster<Message: Sendable>: Sendable {
    fileprivate let shared: InboxState<Message>

    /// Queues `message` and wakes the loop (libevent's event_active is thread-safe with pthreads on).
    /// Returns false when the inbox no longer exists.
    @discardableResult
    package func post(_ message: Message) -> Bool { shared.post(message) }
}

/// The queue and the wake-up event, behind one lock shared by the inbox and its posters. The event
/// is freed under the lock when the inbox goes, so a late poster finds it gone instead of freed.
final class InboxState<Message: Sendable>: Sendable {
    private struct Guarded {
        var event: EventHandle?
        var queue: [Message] = []
    }

    /// `@unchecked Sendable`: the pointer is only used under the lock, with event_active (thread-safe)
    /// or event_free (by the inbox's owner, which then clears it).
    private struct EventHandle: @unchecked Sendable {
        let raw: OpaquePointer
    }

    private let guarded = Locked(Guarded())

    func open(_ event: OpaquePointer) {
        let handle = EventHandle(raw: event)
        guarded.withLock { $0.event = handle }
    }

    func close() {
        guarded.withLock { state in
            if let event = state.event { event_free(event.raw) }
            state.event = nil
            state.queue.removeAll()
        }
    }

    func post(_ message: Message) -> Bool {
        guarded.withLock { state in
            guard let event = state.event else { return false }
            let wasEmpty = state.queue.isEmpty
            state.queue.append(message)
            // One wake-up per batch: the callback drains everything queued by then.
            if wasEmpty { event_active(event.raw, Int32(EV_READ), 0) }
            return true
        }
    }

    func takeAll() -> [Message] {
        guarded.withLock { state in
            let messages = state.queue
            state.queue.removeAll(keepingCapacity: true)
            return messages
        }
    }
}

private func inboxCallback(_ descriptor: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    // The inbox's type parameter is erased here, so it dispatches through a protocol.
    (Unmanaged<AnyObject>.fromOpaque(context).takeUnretainedValue() as? any InboxDraining)?.drainInbox()
}

/// Lets the untyped C callback reach a generic ``LoopInbox``.
protocol InboxDraining: AnyObject {
    func drainInbox()
}

extension LoopInbox: InboxDraining {
    func drainInbox() { drain() }
}
