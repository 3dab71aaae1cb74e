import EventLoop
import POSIX
import Synchronization

/// How many connections one proxy loop is serving, kept by the loop, read by the accepting loop.
package final class LoopLoad: Sendable {
    private let open = Atomic<Int>(0)
    private let served = Atomic<Int>(0)

    package init() {}

    /// Connections open on the loop now.
    package var openConnections: Int { open.load(ordering: .relaxed) }
    /// Connections the loop has served since it started.
    package var servedConnections: Int { served.load(ordering: .relaxed) }

    func connectionOpened() {
        open.add(1, ordering: .relaxed)
        served.add(1, ordering: .relaxed)
    }

    func connectionClosed() { open.subtract(1, ordering: .relaxed) }
}

/// Spreads accepted clients over the proxy loops. One loop accepts for all; it keeps each new
/// client while it serves fewer than ``keepBelow`` connections, and beyond that hands the client to
/// the loop serving the fewest (itself on a tie).
///
/// Why not one listener per loop (SO_REUSEPORT), the kernel spreading connections evenly: at the
/// light load a QA proxy mostly sees, every loop then holds a few connections and sleeps and wakes
/// for each of their events, where one loop serving them all finds several events ready per wake-up.
/// Measured on 2 cores with 8 clients at a time, spreading cost about a quarter more CPU per tunnel
/// (bench/proxy-bench/README.md). Heavy load still spreads over every loop.
package final class LoopBalancer: Sendable {
    private struct Member: Sendable {
        let load: LoopLoad
        let inbox: InboxPoster<ProxyMessage>
    }

    /// How many connections the accepting loop serves before it hands new ones to less busy loops.
    package let keepBelow: Int
    private let members = Locked<[Member]>([])

    package static let defaultKeepBelow = 32

    package init(keepBelow: Int = LoopBalancer.defaultKeepBelow) { self.keepBelow = keepBelow }

    /// Adds a loop (at its start, on any thread).
    func join(load: LoopLoad, inbox: InboxPoster<ProxyMessage>) {
        members.withLock { $0.append(Member(load: load, inbox: inbox)) }
    }

    /// The loops' loads, in the order they joined (for `status`).
    package var loads: [LoopLoad] { members.withLock { $0.map(\.load) } }

    /// Where a client accepted by the loop with `load` should be served: nil for that loop itself,
    /// or the inbox of a loop serving fewer connections.
    func destination(acceptedBy load: LoopLoad) -> InboxPoster<ProxyMessage>? {
        let own = load.openConnections
        guard own >= keepBelow else { return nil }
        return members.withLock { members in
            var best: Member?
            var fewest = own
            for member in members where member.load !== load {
                let open = member.load.openConnections
                if open < fewest {
                    fewest = open
                    best = member
                }
            }
            return best?.inbox
        }
    }
}
