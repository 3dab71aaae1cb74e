/// The verdict cache's entries, in the slots of one array, threaded by index on two doubly linked
/// lists: recency (for least-recently-used eviction) and completion order (for the expiry sweep).
/// Every operation is O(1) apart from ``compact()``; no entry is a class instance of its own.
///
/// Only finished entries are on the lists: an entry in flight (a probe under way, with its waiters)
/// is reachable through ``index`` alone, so neither eviction nor the sweep can ever reach it.
///
/// Not thread-safe: ``VerdictCache`` keeps it behind its mutex.
struct VerdictCacheStorage<Key: Hashable, Value> {
    typealias Waiter = @Sendable (Value) -> Void

    enum Content {
        case ready(Value, expires: Int64)
        case inFlight([Waiter])
    }

    /// "No slot", for the links.
    static var none: Int { -1 }

    struct Slot {
        /// Nil when the slot is free.
        var key: Key?
        var content: Content?
        // Recency list; the free list is chained through `lessRecent` too.
        var moreRecent = VerdictCacheStorage.none
        var lessRecent = VerdictCacheStorage.none
        // Completion-order list.
        var newer = VerdictCacheStorage.none
        var older = VerdictCacheStorage.none
    }

    private(set) var slots: [Slot] = []
    private(set) var index: [Key: Int] = [:]
    private(set) var mostRecent = none
    private(set) var leastRecent = none
    private(set) var newest = none
    private(set) var oldest = none
    private var firstFree = none
    private(set) var inFlightCount = 0

    /// Entries held, in flight or finished.
    var count: Int { index.count }

    /// The slot holding `key`.
    func find(_ key: Key) -> Int? { index[key] }

    // MARK: - Entries

    /// Adds `key` as a probe in flight, off both lists. The key must not be held already.
    mutating func insertInFlight(_ key: Key, waiters: [Waiter] = []) {
        let slot = allocate()
        slots[slot].key = key
        slots[slot].content = .inFlight(waiters)
        index[key] = slot
        inFlightCount += 1
    }

    /// Adds a waiter to the probe in flight in `slot`.
    mutating func addWaiter(_ waiter: @escaping Waiter, at slot: Int) {
        guard case .inFlight(var waiters)? = slots[slot].content else { return }
        // Emptied first, so the array is not copied on append.
        slots[slot].content = nil
        waiters.append(waiter)
        slots[slot].content = .inFlight(waiters)
    }

    /// Stores a finished value for `key` as the most recent and newest entry, whatever the key held
    /// before; returns the waiters of the probe that was in flight for it, if any.
    mutating func store(_ key: Key, _ value: Value, expires: Int64) -> [Waiter] {
        var waiters: [Waiter] = []
        let slot: Int
        if let held = index[key] {
            slot = held
            switch slots[held].content {
            case .inFlight(let list)?:
                waiters = list
                inFlightCount -= 1
            case .ready?:
                unlink(held)
            case nil:
                break
            }
        } else {
            slot = allocate()
            slots[slot].key = key
            index[key] = slot
        }
        slots[slot].content = .ready(value, expires: expires)
        linkAsMostRecent(slot)
        linkAsNewest(slot)
        return waiters
    }

    /// Removes the entry in `slot` and returns what it held.
    @discardableResult
    mutating func remove(_ slot: Int) -> Content? {
        let content = slots[slot].content
        switch content {
        case .ready?: unlink(slot)
        case .inFlight?: inFlightCount -= 1
        case nil: return nil
        }
        if let key = slots[slot].key { index.removeValue(forKey: key) }
        slots[slot].key = nil
        slots[slot].content = nil
        slots[slot].lessRecent = firstFree
        firstFree = slot
        return content
    }

    /// Makes the finished entry in `slot` the most recently used.
    mutating func touch(_ slot: Int) {
        guard slot != mostRecent else { return }
        unlinkRecency(slot)
        linkAsMostRecent(slot)
    }

    // MARK: - Recency list

    private mutating func linkAsMostRecent(_ slot: Int) {
        slots[slot].moreRecent = Self.none
        slots[slot].lessRecent = mostRecent
        if mostRecent != Self.none { slots[mostRecent].moreRecent = slot }
        mostRecent = slot
        if leastRecent == Self.none { leastRecent = slot }
    }

    private mutating func unlinkRecency(_ slot: Int) {
        let (more, less) = (slots[slot].moreRecent, slots[slot].lessRecent)
        if more != Self.none { slots[more].lessRecent = less } else { mostRecent = less }
        if less != Self.none { slots[less].moreRecent = more } else { leastRecent = more }
        slots[slot].moreRecent = Self.none
        slots[slot].lessRecent = Self.none
    }

    // MARK: - Completion-order list

    private mutating func linkAsNewest(_ slot: Int) {
        slots[slot].newer = Self.none
        slots[slot].older = newest
        if newest != Self.none { slots[newest].newer = slot }
        newest = slot
        if oldest == Self.none { oldest = slot }
    }

    private mutating func unlinkCompletion(_ slot: Int) {
        let (newer, older) = (slots[slot].newer, slots[slot].older)
        if newer != Self.none { slots[newer].older = older } else { newest = older }
        if older != Self.none { slots[older].newer = newer } else { oldest = newer }
        slots[slot].newer = Self.none
        slots[slot].older = Self.none
    }

    private mutating func unlink(_ slot: Int) {
        unlinkRecency(slot)
        unlinkCompletion(slot)
    }

    // MARK: - Slots

    private mutating func allocate() -> Int {
        guard firstFree != Self.none else {
            slots.append(Slot())
            return slots.count - 1
        }
        let slot = firstFree
        firstFree = slots[slot].lessRecent
        slots[slot].lessRecent = Self.none
        return slot
    }

    /// Whether most slots are free (after a flush or a shrink): worth a ``compact()``.
    var isSparse: Bool { slots.count > 64 && count * 4 < slots.count }

    /// Moves the entries to the front of a new, tight array (the lists keep their order) and gives
    /// the rest back: freed slots are otherwise kept for reuse, at their high-water mark. O(n).
    mutating func compact() {
        var moved = [Int](repeating: Self.none, count: slots.count)
        var kept: [Slot] = []
        kept.reserveCapacity(count)
        for slot in slots.indices where slots[slot].content != nil {
            moved[slot] = kept.count
            kept.append(slots[slot])
        }
        func map(_ slot: Int) -> Int { slot == Self.none ? Self.none : moved[slot] }
        for slot in kept.indices {
            kept[slot].moreRecent = map(kept[slot].moreRecent)
            kept[slot].lessRecent = map(kept[slot].lessRecent)
            kept[slot].newer = map(kept[slot].newer)
            kept[slot].older = map(kept[slot].older)
        }
        (mostRecent, leastRecent, newest, oldest) = (map(mostRecent), map(leastRecent), map(newest), map(oldest))
        var rebuilt: [Key: Int] = [:]
        rebuilt.reserveCapacity(kept.count)
        for slot in kept.indices { if let key = kept[slot].key { rebuilt[key] = slot } }
        slots = kept
        index = rebuilt
        firstFree = Self.none
    }
}
