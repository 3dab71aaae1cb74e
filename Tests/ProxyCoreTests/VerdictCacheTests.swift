import Dispatch
import POSIX
import ProxyCore
import Synchronization
import Testing

@Suite("Verdict cache")
struct VerdictCacheTests {
    @Test("a value is fresh for its time to live, then probed again")
    func timeToLive() {
        let cache = VerdictCache<String, Int>(timeToLiveMilliseconds: 1000)
        guard case .probe = cache.lookup("a", now: 0, waiter: { _ in }) else {
            Issue.record("first lookup must probe")
            return
        }
        cache.complete("a", with: 7, now: 0)
        guard case .hit(7) = cache.lookup("a", now: 999, waiter: { _ in }) else {
            Issue.record("fresh value expected")
            return
        }
        guard case .probe = cache.lookup("a", now: 1000, waiter: { _ in }) else {
            Issue.record("an expired value must be probed again")
            return
        }
    }

    @Test("concurrent first lookups share one probe; every waiter gets the answer once")
    func coalescing() async {
        let cache = VerdictCache<String, Int>(timeToLiveMilliseconds: 60_000)
        let probes = Atomic<Int>(0)
        let answers = Atomic<Int>(0)
        let group = DispatchGroup()
        for _ in 0..<64 {
            DispatchQueue.global().async(group: group) {
                switch cache.lookup(
                    "host:443", now: 0,
                    waiter: { value in
                        if value == 42 { answers.add(1, ordering: .relaxed) }
                    })
                {
                case .probe:
                    probes.add(1, ordering: .relaxed)
                case .waiting, .hit:
                    break
                }
            }
        }
        group.wait()
        #expect(probes.load(ordering: .relaxed) == 1)
        cache.complete("host:443", with: 42, now: 0)
        #expect(answers.load(ordering: .relaxed) == 63)
    }

    @Test("an abandoned probe answers its waiters and caches nothing")
    func abandon() {
        let cache = VerdictCache<String, Int>(timeToLiveMilliseconds: 60_000)
        _ = cache.lookup("a", now: 0, waiter: { _ in })
        let received = Locked<[Int]>([])
        _ = cache.lookup("a", now: 0, waiter: { value in received.withLock { $0.append(value) } })
        cache.abandon("a", answering: -1)
        #expect(received.withLock { $0 } == [-1])
        #expect(cache.count == 0)
    }

    @Test("flushing drops finished entries and keeps probes in flight")
    func flush() {
        let cache = VerdictCache<String, Int>(timeToLiveMilliseconds: 60_000)
        _ = cache.lookup("done", now: 0, waiter: { _ in })
        cache.complete("done", with: 1, now: 0)
        _ = cache.lookup("pending", now: 0, waiter: { _ in })
        cache.removeAll()
        #expect(cache.count == 1)
        guard case .waiting = cache.lookup("pending", now: 0, waiter: { _ in }) else {
            Issue.record("the probe in flight must survive a flush")
            return
        }
        cache.complete("x", with: 2, now: 0)
        cache.removeAll(where: { $0 == "x" })
        guard case .probe = cache.lookup("x", now: 0, waiter: { _ in }) else {
            Issue.record("a removed key must be probed again")
            return
        }
    }
}
