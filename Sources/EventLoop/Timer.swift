internal import CLibevent
import Glibc
import POSIX

/// A one-shot timer: what a loop's users need of one, so that a scripted session's tests can fire
/// it in the clock's place (``Timer`` on a loop).
package protocol LoopTimer: AnyObject {
    /// Fires once after `delay`, unless cancelled or scheduled again first.
    func schedule(after delay: Duration)
    /// Disarms it; nothing fires until it is scheduled again.
    func cancel()
}

/// A one-shot timer on an event base: the single owner of its `event`, freed in `deinit`.
///
/// ``schedule(after:)`` arms it (re-arming replaces the pending time), ``cancel()`` disarms it.
/// The C callback's context is the timer itself, unretained: `deinit` frees the event first, so no
/// callback can run on a freed timer.
package final class Timer: LoopTimer {
    private var raw: OpaquePointer?
    private let onFire: () -> Void

    package init(base: EventBase, onFire: @escaping () -> Void) throws(EventError) {
        self.onFire = onFire
        // evtimer_new(base, cb, arg) is a macro for event_new(base, -1, 0, cb, arg).
        guard let event = event_new(base.raw, -1, 0, timerCallback, nil) else { throw EventError("event_new (timer)") }
        raw = event
        event_assign(event, base.raw, -1, 0, timerCallback, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        if let raw { event_free(raw) }
    }

    /// Fires once after `delay`, unless cancelled or scheduled again first.
    package func schedule(after delay: Duration) {
        guard let raw else { return }
        var time = timeval(duration: delay)
        // evtimer_add(ev, tv) is a macro for event_add(ev, tv).
        event_add(raw, &time)
    }

    package func cancel() {
        guard let raw else { return }
        // evtimer_del(ev) is a macro for event_del(ev).
        event_del(raw)
    }

    fileprivate func fire() { onFire() }
}

private func timerCallback(_ descriptor: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    Unmanaged<Timer>.fromOpaque(context).takeUnretainedValue().fire()
}
