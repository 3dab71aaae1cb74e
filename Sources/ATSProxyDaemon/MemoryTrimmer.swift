import CMalloc
import EventLoop
import Glibc
import ProxyCore

/// Hands the memory of a burst of connections back to the system once the burst is over: glibc
/// keeps freed memory in each thread's arena, so without this the daemon's RSS after a burst stays
/// at the burst's height (measured in docs/performance.md, "Memory after a burst").
///
/// Runs on the main loop: every ``interval`` it reads the open connections (and the most open
/// since the last time) and, when
/// ``BurstWatch`` says a burst has ended, calls `malloc_trim(0)`, which returns the free pages
/// of every arena (glibc 2.8 and later). The loops never wait for it beyond an arena's lock.
final class MemoryTrimmer {
    /// How often the open connections are read.
    static let interval: Duration = .seconds(5)

    private var watch = BurstWatch()
    /// The web listener's connections, watched apart: an event stream may hold a whole state of
    /// the live view (a megabyte with thousands of hosts), so a few dozen gone are worth a trim.
    private var webWatch = BurstWatch(minimumDrop: 32)
    private var clock: EventLoop.Timer?
    private let statistics: ProxyStatistics
    /// The web listener's open connections, and the most since the last look; nil without one.
    private let webConnections: (() -> (open: Int, peak: Int))?
    /// Trims done since start, and the resident bytes they returned (RSS before minus after).
    private(set) var trims = 0
    private(set) var bytesReturned = 0

    /// Starts watching on `base`: the connections `statistics` counts, and those of the web
    /// listener, are read every ``interval``.
    init(
        base: EventBase, statistics: ProxyStatistics, webConnections: (() -> (open: Int, peak: Int))? = nil
    ) throws(EventError) {
        self.statistics = statistics
        self.webConnections = webConnections
        clock = try EventLoop.Timer(base: base) { [unowned self] in tick() }
        clock?.schedule(after: Self.interval)
    }

    private func tick() {
        let peak = statistics.takePeakOpenConnections()
        let proxyBurstEnded = watch.observe(open: statistics.openConnections, peakSinceLast: peak)
        let web = webConnections?()
        let webBurstEnded = web.map { webWatch.observe(open: $0.open, peakSinceLast: $0.peak) } ?? false
        if proxyBurstEnded || webBurstEnded { trim() }
        clock?.schedule(after: Self.interval)
    }

    /// Returns free memory to the system now, and counts what it gave back.
    func trim() {
        let before = ResidentMemory.bytes()
        malloc_trim(0)
        let after = ResidentMemory.bytes()
        trims += 1
        bytesReturned += max(0, before - after)
    }
}

/// The process's resident set, from /proc/self/statm (its second field, in pages); 0 if unreadable.
enum ResidentMemory {
    static func bytes() -> Int {
        let descriptor = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { return 0 }
        let fields = buffer[..<count].split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
        return pages * sysconf(Int32(_SC_PAGESIZE))
    }
}
