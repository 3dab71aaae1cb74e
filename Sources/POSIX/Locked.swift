import Glibc

/// A value behind a pthread mutex: the one lock type of the code that runs on several threads.
///
/// Not `Synchronization.Mutex`: on Linux that waits on a futex directly, which ThreadSanitizer
/// cannot see, so every value it guards reads to TSan as a data race and `make test-sanitize`
/// could not check our threads. A pthread mutex is what TSan intercepts, and uncontended it costs
/// the same (one atomic exchange each way); swift-nio's `NIOLock` makes the same choice.
package final class Locked<Value: ~Copyable>: @unchecked Sendable {
    // Allocated, never moved: a pthread_mutex_t must keep its address while in use.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// A lock guarding `value`.
    package init(_ value: consuming Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init: \(status)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock; returns what `body` returns. `body` must not
    /// take this lock again (the mutex is not recursive).
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
