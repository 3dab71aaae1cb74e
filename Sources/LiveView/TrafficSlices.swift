import ATSPolicy
import LogRecord
import TrafficReport

/// The report's per-host tally kept apart for each app and device: what lets the plist panel
/// suggest the narrowest policy for the traffic a filter selects rather than for all of it.
///
/// Bounded: at most ``maximumSlices`` (app, device) pairs, each tallying at most
/// ``maximumHostsPerSlice`` hosts. Lines of further pairs are counted in ``droppedLines``, and a
/// slice's own tally counts the lines about its further hosts: a filtered suggestion may leave
/// those out, and says so.
package struct TrafficSlices: Sendable {
    /// One slice: the app a line named (``AppKey``) and the device's address without its port
    /// (``HostActivity/address(_:)``; empty when the line had no `client`), or a WireGuard device's name.
    package struct Key: Sendable, Hashable {
        package var app: AppKey
        package var client: String
    }

    package let maximumSlices: Int
    package let maximumHostsPerSlice: Int
    /// The slices in the order they were first seen.
    package private(set) var keys: [Key] = []
    private var tallies: [Key: HostTrafficTally] = [:]
    /// Lines of (app, device) pairs beyond ``maximumSlices``: in no slice.
    package private(set) var droppedLines = 0

    package init(maximumSlices: Int, maximumHostsPerSlice: Int) {
        self.maximumSlices = max(0, maximumSlices)
        self.maximumHostsPerSlice = max(0, maximumHostsPerSlice)
    }

    package subscript(key: Key) -> HostTrafficTally? { tallies[key] }

    mutating func add(_ record: LoggedConnection) {
        guard record.isLoad else { return }
        update(Key(app: AppKey(record.app), client: record.device ?? HostActivity.address(record.client ?? ""))) {
            $0.add(record)
        }
    }

    /// A request line, its host parsed already (nil when it is not one: the line's slice is still
    /// made, as for a connection line, and it counts for no host).
    mutating func add(_ request: LoggedRequest, host: HostIdentity?) {
        update(Key(app: AppKey(request.app), client: request.device ?? HostActivity.address(request.client ?? ""))) {
            if let host { $0.add(request, host: host) }
        }
    }

    private mutating func update(_ key: Key, _ change: (inout HostTrafficTally) -> Void) {
        if tallies[key] == nil {
            guard keys.count < maximumSlices else {
                droppedLines += 1
                return
            }
            keys.append(key)
        }
        change(&tallies[key, default: HostTrafficTally(maximumHosts: maximumHostsPerSlice)])
    }

    /// The hosts of the slices `selected` lets through, each host's traffic from every one of them
    /// added up (``TrafficReport/HostTraffic/absorb(_:)``), in first-seen order slice by slice.
    package func hosts(where selected: (Key) -> Bool) -> [HostTraffic] {
        var merged: [HostTraffic] = []
        var index: [HostIdentity: Int] = [:]
        for key in keys where selected(key) {
            for traffic in tallies[key]?.hosts ?? [] {
                if let existing = index[traffic.host] {
                    merged[existing].absorb(traffic)
                } else {
                    index[traffic.host] = merged.count
                    merged.append(traffic)
                }
            }
        }
        return merged
    }

    /// Lines the slices `selected` lets through left out (hosts beyond a slice's limit), and, when
    /// any pair was beyond ``maximumSlices``, those lines too (their app and device are not known
    /// to the filter): what a filtered suggestion may be missing.
    package func linesLeftOut(where selected: (Key) -> Bool) -> Int {
        keys.filter(selected).reduce(droppedLines) { sum, key in
            let tally = tallies[key]
            return sum + (tally?.droppedLines ?? 0) + (tally?.droppedRequests ?? 0)
        }
    }
}
