/// The leaves one event loop has minted, by name: least recently used first out, at most
/// `capacity`. Not thread-safe, by design: each loop owns one, so a handshake's lookup takes no
/// lock; two loops meeting the same new host each mint once (one CA signature, tens of µs).
///
/// A leaf past half its lifetime is minted again, so a cached leaf always has months left and
/// a device whose clock runs ahead still accepts it.
package final class LeafCache {
    package let minter: LeafMinter
    package let capacity: Int
    /// How many leaves this cache has minted (first uses, evicted names met again, renewals).
    package private(set) var mints = 0

    /// One cached leaf, linked into the recency list by slot index (no allocation per hit).
    private struct Entry {
        var name: LeafName
        var leaf: MintedLeaf
        var newer: Int?
        var older: Int?
    }

    private var slots: [Entry] = []
    private var slotByName: [LeafName: Int] = [:]
    private var newest: Int?
    private var oldest: Int?

    package var count: Int { slotByName.count }

    /// - Parameter capacity: at least 1.
    package init(minter: LeafMinter, capacity: Int = 1000) {
        precondition(capacity >= 1, "a leaf cache holds at least one leaf")
        self.minter = minter
        self.capacity = capacity
    }

    /// The credentials for `name`: the cached leaf while it is less than half-way through its
    /// life, else a new one (which replaces it, evicting the least recently used name when full).
    /// - Parameter now: seconds since 1970.
    package func credentials(for name: LeafName, now: Int64) throws(TLSError) -> ServerCredentials {
        if let slot = slotByName[name] {
            let leaf = slots[slot].leaf
            let halfLife = leaf.notBefore + (leaf.notAfter - leaf.notBefore) / 2
            if now >= leaf.notBefore && now < halfLife {
                minter.statistics.cacheHit()
                moveToNewest(slot)
                return leaf.credentials
            }
            slots[slot].leaf = try mint(name, now: now)
            moveToNewest(slot)
            return slots[slot].leaf.credentials
        }
        let leaf = try mint(name, now: now)
        let slot: Int
        if slotByName.count < capacity {
            slot = slots.count
            slots.append(Entry(name: name, leaf: leaf, newer: nil, older: nil))
        } else {
            // Full: the oldest slot takes the new name.
            slot = oldest!
            unlink(slot)
            slotByName[slots[slot].name] = nil
            slots[slot] = Entry(name: name, leaf: leaf, newer: nil, older: nil)
        }
        slotByName[name] = slot
        linkAsNewest(slot)
        return leaf.credentials
    }

    private func mint(_ name: LeafName, now: Int64) throws(TLSError) -> MintedLeaf {
        let leaf = try minter.mint(for: name, now: now)
        mints += 1
        return leaf
    }

    private func moveToNewest(_ slot: Int) {
        guard newest != slot else { return }
        unlink(slot)
        linkAsNewest(slot)
    }

    private func unlink(_ slot: Int) {
        let (newer, older) = (slots[slot].newer, slots[slot].older)
        if let newer { slots[newer].older = older } else { newest = older }
        if let older { slots[older].newer = newer } else { oldest = newer }
        slots[slot].newer = nil
        slots[slot].older = nil
    }

    private func linkAsNewest(_ slot: Int) {
        slots[slot].older = newest
        slots[slot].newer = nil
        if let newest { slots[newest].newer = slot }
        newest = slot
        if oldest == nil { oldest = slot }
    }
}
