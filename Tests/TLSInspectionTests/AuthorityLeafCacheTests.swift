import Foundation
import TLSInspection
import TLSTestSupport
import Testing

/// The per-loop leaf cache: hits return the same leaf, the least recently used name goes first,
/// and a leaf past half its life (or outside its validity) is minted again.
@Suite("LeafCache: one loop's minted leaves")
struct LeafCacheTests {
    /// A cache over a fresh CA; the scratch directory goes with the test.
    static func cache(capacity: Int) throws -> (LeafCache, AuthorityScratch) {
        let scratch = try AuthorityScratch()
        return (LeafCache(minter: try LeafMinter(authority: scratch.createCA()), capacity: capacity), scratch)
    }

    @Test("a repeated name gets the same leaf object, minted once")
    func hit() throws {
        let (cache, _) = try Self.cache(capacity: 10)
        let now = secondsNow
        let first = try cache.credentials(for: .dns("a.test"), now: now)
        let again = try cache.credentials(for: .dns("a.test"), now: now + 60)
        #expect(first.chain[0] === again.chain[0])
        #expect(cache.mints == 1 && cache.count == 1)
        let address = try cache.credentials(for: .ip(bytes: [192, 0, 2, 1]), now: now)
        #expect(address.chain[0] !== first.chain[0])
        #expect(cache.mints == 2 && cache.count == 2)
    }

    @Test("full: the least recently used name is evicted, not the oldest minted")
    func leastRecentlyUsed() throws {
        let (cache, _) = try Self.cache(capacity: 3)
        let now = secondsNow
        let a = try cache.credentials(for: .dns("a.test"), now: now)
        _ = try cache.credentials(for: .dns("b.test"), now: now)
        _ = try cache.credentials(for: .dns("c.test"), now: now)
        _ = try cache.credentials(for: .dns("a.test"), now: now)  // a is now the most recent; b the least
        _ = try cache.credentials(for: .dns("d.test"), now: now)  // evicts b
        #expect(cache.count == 3 && cache.mints == 4)
        #expect(try cache.credentials(for: .dns("a.test"), now: now).chain[0] === a.chain[0], "a stayed")
        _ = try cache.credentials(for: .dns("c.test"), now: now)
        _ = try cache.credentials(for: .dns("d.test"), now: now)
        #expect(cache.mints == 4, "c and d stayed")
        _ = try cache.credentials(for: .dns("b.test"), now: now)  // minted again; evicts a (least recent)
        #expect(cache.mints == 5 && cache.count == 3)
        #expect(try cache.credentials(for: .dns("a.test"), now: now).chain[0] !== a.chain[0], "a was evicted")
        #expect(cache.mints == 6 && cache.count == 3)
    }

    @Test("a capacity-1 cache keeps the last name only")
    func capacityOne() throws {
        let (cache, _) = try Self.cache(capacity: 1)
        let now = secondsNow
        for name in ["a.test", "b.test", "a.test", "a.test"] { _ = try cache.credentials(for: .dns(name), now: now) }
        #expect(cache.count == 1 && cache.mints == 3)
    }

    /// When a cached leaf (minted at t0, valid t0 − 2 d … t0 + 197 d) is asked for again.
    struct Age: Sendable, CustomTestStringConvertible {
        var name: String
        var offset: Int64
        var reminted: Bool
        var testDescription: String { name }
    }

    static let day: Int64 = 86_400
    // Half-life: t0 − 2 d + 99.5 d = t0 + 97.5 d.
    static let ages: [Age] = [
        Age(name: "a day later", offset: day, reminted: false),
        Age(name: "just before half its life", offset: 97 * day + day / 2 - 1, reminted: false),
        Age(name: "at half its life", offset: 97 * day + day / 2, reminted: true),
        Age(name: "past its notAfter", offset: 200 * day, reminted: true),
        Age(name: "a clock set back before its notBefore", offset: -3 * day, reminted: true),
    ]

    @Test("a leaf past half its life, or outside its validity, is minted again in place", arguments: ages)
    func renewal(_ age: Age) throws {
        let (cache, _) = try Self.cache(capacity: 10)
        let t0 = secondsNow
        let first = try cache.credentials(for: .dns("a.test"), now: t0)
        let later = try cache.credentials(for: .dns("a.test"), now: t0 + age.offset)
        #expect((later.chain[0] !== first.chain[0]) == age.reminted)
        #expect(cache.mints == (age.reminted ? 2 : 1) && cache.count == 1)
        if age.reminted { #expect(later.chain[0].notBefore == t0 + age.offset - 2 * Self.day) }
    }
}
