internal import CLibevent
import Glibc

/// A signal delivered as an event on a base's thread (libevent's self-pipe), so its handler may do
/// anything a callback may: reload a policy, start a shutdown. The single owner of its `event`.
///
/// The signal must be unblocked on the thread that runs the base and blocked on every other.
package final class SignalEvent {
    private var raw: OpaquePointer?
    private let onSignal: () -> Void

    package init(base: EventBase, signal number: Int32, onSignal: @escaping () -> Void) throws(EventError) {
        self.onSignal = onSignal
        // evsignal_new(base, signum, cb, arg) is a macro for event_new(base, signum, EV_SIGNAL|EV_PERSIST, cb, arg).
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard let event = event_new(base.raw, number, Int16(EV_SIGNAL | EV_PERSIST), signalCallback, context) else {
            throw EventError("evsignal_new(\(number))")
        }
        raw = event
        // evsignal_add(ev, tv) is a macro for event_add(ev, tv).
        guard event_add(event, nil) == 0 else { throw EventError("evsignal_add(\(number))") }
    }

    deinit {
        if let raw { event_free(raw) }
    }

    fileprivate func fire() { onSignal() }
}

private func signalCallback(_ descriptor: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    Unmanaged<SignalEvent>.fromOpaque(context).takeUnretainedValue().fire()
}
