import ProxyCore
import TLSInspection
import Testing

/// The cache of CA Issuers answers every loop shares: one fetch per URL at a time, answers kept an
/// hour and failures a minute, bounded.
@Suite("intermediate fetch cache")
struct IntermediateFetchCacheTests {
    final class Heard: @unchecked Sendable {
        var answers: [String] = []
    }

    static func failure(_ reason: String) -> IntermediateFetchCache.Answer { .failure(.init(reason)) }

    @Test("the first asker fetches, the next ones wait and are told, later ones get the answer")
    func oneFetchAtATime() {
        let cache = IntermediateFetchCache()
        let heard = Heard()
        guard case .fetch = cache.lookup("http://a/x", now: 0, waiter: { _ in heard.answers.append("first") }) else {
            Issue.record("the first asker must fetch")
            return
        }
        for name in ["second", "third"] {
            guard case .waiting = cache.lookup("http://a/x", now: 1, waiter: { _ in heard.answers.append(name) }) else {
                Issue.record("\(name) must wait for the fetch under way")
                return
            }
        }
        #expect(heard.answers.isEmpty)
        cache.complete("http://a/x", with: Self.failure("gone"), now: 2)
        #expect(heard.answers == ["second", "third"], "the fetcher is not a waiter of its own fetch")
        guard case .answered(.failure(let failure)) = cache.lookup("http://a/x", now: 3, waiter: { _ in }) else {
            Issue.record("a later asker gets the answer")
            return
        }
        #expect(failure.reason == "gone")
    }

    @Test("a failure is kept a minute, then fetched again")
    func failureLifetime() {
        let cache = IntermediateFetchCache()
        _ = cache.lookup("http://a/x", now: 0, waiter: { _ in })
        cache.complete("http://a/x", with: Self.failure("refused"), now: 0)
        if case .answered = cache.lookup("http://a/x", now: 59_999, waiter: { _ in }) {
        } else {
            Issue.record("kept for a minute")
        }
        if case .fetch = cache.lookup("http://a/x", now: 60_000, waiter: { _ in }) {
        } else {
            Issue.record("fetched again after a minute")
        }
    }

    @Test("bounded: the oldest answers go first, fetches under way never")
    func bounded() {
        let cache = IntermediateFetchCache()
        _ = cache.lookup("http://busy/x", now: 0, waiter: { _ in })
        for index in 0..<IntermediateFetchCache.capacity + 10 {
            let url = "http://h\(index)/x"
            _ = cache.lookup(url, now: 0, waiter: { _ in })
            cache.complete(url, with: Self.failure("no"), now: 0)
        }
        if case .waiting = cache.lookup("http://busy/x", now: 1, waiter: { _ in }) {
        } else {
            Issue.record("the fetch under way is still there")
        }
        if case .fetch = cache.lookup("http://h0/x", now: 1, waiter: { _ in }) {
        } else {
            Issue.record("an old answer was dropped")
        }
        cache.removeAnswers()
        if case .fetch = cache.lookup("http://h\(IntermediateFetchCache.capacity)/x", now: 1, waiter: { _ in }) {
        } else {
            Issue.record("flush-cache forgets answers")
        }
    }
}
