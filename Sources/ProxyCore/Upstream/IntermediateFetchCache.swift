import POSIX
import TLSInspection

/// What CA Issuers URLs gave, shared by every loop, with the fetches under way: one fetch per URL at
/// a time, whichever loop asks, and its answer kept for the next chains that miss the same
/// intermediate (most servers that leave one out share their CA's). Bounded: ``capacity`` URLs, the
/// oldest dropped first; an answer is kept an hour, a failure a minute.
package final class IntermediateFetchCache: Sendable {
    package typealias Answer = Result<[X509Certificate], IntermediateCompletion.FetchFailure>
    /// Told the answer, from the loop that fetched: it posts to its own loop's inbox.
    package typealias Waiter = @Sendable (Answer) -> Void

    package static let capacity = 256
    static let answerLifetime: Int64 = 3_600_000
    static let failureLifetime: Int64 = 60_000

    private enum Entry {
        case fetching(waiters: [Waiter])
        case answered(Answer, until: Int64)
    }

    private struct State: ~Copyable {
        var entries: [String: Entry] = [:]
        /// URLs in the order they were first asked for: the oldest answers go first when full.
        var order: [String] = []
    }

    private let state = Locked(State())

    package init() {}

    /// What the caller is to do for `url`.
    package enum Lookup {
        /// Answered already (from an earlier fetch).
        case answered(Answer)
        /// Another loop fetches it; `waiter` will be told.
        case waiting
        /// Nobody fetches it: the caller does, then calls ``complete(_:with:now:)``.
        case fetch
    }

    package func lookup(_ url: String, now: Int64, waiter: @escaping Waiter) -> Lookup {
        state.withLock { state in
            switch state.entries[url] {
            case .answered(let answer, let until)? where until > now:
                return .answered(answer)
            case .fetching(let waiters)?:
                state.entries[url] = .fetching(waiters: waiters + [waiter])
                return .waiting
            case .answered?, nil:
                if state.entries[url] == nil { state.order.append(url) }
                state.entries[url] = .fetching(waiters: [])
                // The oldest answer goes; a fetch under way never does: its waiters are owed an answer.
                while state.order.count > Self.capacity,
                    let index = state.order.firstIndex(where: {
                        if case .answered? = state.entries[$0] { true } else { false }
                    })
                {
                    state.entries[state.order.remove(at: index)] = nil
                }
                return .fetch
            }
        }
    }

    /// The fetch of `url` ended: keeps the answer and tells whoever waited for it.
    package func complete(_ url: String, with answer: Answer, now: Int64) {
        let lifetime = (try? answer.get()) == nil ? Self.failureLifetime : Self.answerLifetime
        let waiters: [Waiter] = state.withLock { state in
            guard case .fetching(let waiters)? = state.entries[url] else { return [] }
            state.entries[url] = .answered(answer, until: now + lifetime)
            return waiters
        }
        for waiter in waiters { waiter(answer) }
    }

    /// Forgets every answer (`flush-cache`); fetches under way go on.
    package func removeAnswers() {
        state.withLock { state in
            for (url, entry) in state.entries {
                if case .answered = entry { state.entries[url] = nil }
            }
            state.order.removeAll { state.entries[$0] == nil }
        }
    }
}
