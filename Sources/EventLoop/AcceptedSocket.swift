import Glibc
import Synchronization

/// An accepted client socket on its way to another loop's thread: the single owner of the
/// descriptor until a loop takes it, and the one place that closes it when none does (the message
/// carrying it was dropped because the loop had stopped).
package final class AcceptedSocket: Sendable {
    private let descriptor: Atomic<Int32>

    package init(_ descriptor: Int32) { self.descriptor = Atomic(descriptor) }

    /// The descriptor, once: the caller owns it from now on. Nil if it was taken already.
    package func take() -> Int32? {
        let taken = descriptor.exchange(-1, ordering: .acquiringAndReleasing)
        return taken >= 0 ? taken : nil
    }

    deinit {
        let left = descriptor.load(ordering: .acquiring)
        if left >= 0 { Glibc.close(left) }
    }
}
