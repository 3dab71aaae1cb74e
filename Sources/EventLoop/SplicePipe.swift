internal import CSplice
import Glibc
import Synchronization

/// A kernel pipe that spliced bytes pass through on their way from one socket to another: the
/// single owner of its two descriptors, closed in `deinit` and only there.
///
/// Made with O_CLOEXEC (a child the daemon starts must not inherit it) and O_NONBLOCK (a splice
/// into a full pipe or out of an empty one returns EAGAIN instead of blocking the loop).
final class SplicePipe {
    let readEnd: Int32
    let writeEnd: Int32
    /// What the pipe holds at most, in bytes (F_GETPIPE_SZ).
    private(set) var capacity: Int
    /// The bytes this pipe's growth took from ``growthBudget``, given back in `deinit`.
    private var grownBy = 0

    /// The size asked for with F_SETPIPE_SZ. 64 KiB is Linux's default, so no fcntl is spent on it.
    /// Pipes count against the user's pipe quota (`/proc/sys/fs/pipe-user-pages-soft`, 64 MiB by
    /// default), which 1 MiB pipes, two per tunnel, would exhaust at 32 tunnels: bigger pipes are
    /// for bulk directions only, and bounded (``grownCapacity``, ``growthBudget``).
    static let defaultCapacity = 64 * 1024

    /// What a pipe grows to once a bulk transfer fills it (``SpliceFlow``): 256 KiB cut the relay's
    /// CPU per GiB by a third on loopback against 64 KiB (bench/proxy-bench/README.md).
    static let grownCapacity = 256 * 1024

    /// The bytes by which all of the process's pipes together may grow beyond their first size:
    /// a quarter of the default per-user pipe quota (64 MiB), so that growing the pipes of bulk
    /// transfers (64 of them at 256 KiB) never spends the quota that new tunnels' 64 KiB pipes need.
    static let growthBudget = 16 * 1024 * 1024

    /// What the process's grown pipes take of ``growthBudget`` now.
    private static let grownBytes = Atomic<Int>(0)

    /// For tests: what all grown pipes take of ``growthBudget``.
    static var grownBytesInUse: Int { grownBytes.load(ordering: .relaxed) }

    /// - Parameter capacity: the size to ask for; the kernel may round it up, and refuses more than
    ///   `/proc/sys/fs/pipe-max-size` or the user's quota, when the pipe keeps its default size.
    init(capacity: Int = SplicePipe.defaultCapacity) throws(EventError) {
        var descriptors: [Int32] = [-1, -1]
        guard CSplice_pipe(&descriptors) == 0 else { throw EventError("pipe2") }
        readEnd = descriptors[0]
        writeEnd = descriptors[1]
        if capacity != 65_536 { _ = CSplice_set_pipe_size(writeEnd, Int32(clamping: capacity)) }
        let size = CSplice_pipe_size(writeEnd)
        self.capacity = size > 0 ? Int(size) : 65_536
    }

    deinit {
        Glibc.close(readEnd)
        Glibc.close(writeEnd)
        if grownBy > 0 { SplicePipe.grownBytes.subtract(grownBy, ordering: .relaxed) }
    }

    /// Asks the kernel to make the pipe `size` bytes, once, if ``growthBudget`` has room for the
    /// difference: true if it grew. A refusal (the user's pipe quota, `pipe-max-size`) leaves it as
    /// it was.
    func grow(to size: Int) -> Bool {
        guard grownBy == 0, size > capacity else { return false }
        let extra = size - capacity
        let total = SplicePipe.grownBytes.add(extra, ordering: .relaxed).newValue
        guard total <= SplicePipe.growthBudget, CSplice_set_pipe_size(writeEnd, Int32(clamping: size)) > 0 else {
            SplicePipe.grownBytes.subtract(extra, ordering: .relaxed)
            return false
        }
        let now = Int(CSplice_pipe_size(writeEnd))
        let grown = max(0, now - capacity)
        // The kernel may round up: the budget counts what the pipe really grew by.
        if grown != extra { SplicePipe.grownBytes.add(grown - extra, ordering: .relaxed) }
        grownBy = grown
        if now > capacity { capacity = now }
        return grownBy > 0
    }

    /// Moves up to `length` bytes from `from` to `to` (one of them this pipe's end) without copying
    /// them through user space: the count, 0 at the end of `from`'s stream, or -1 with errno.
    static func move(from: Int32, to: Int32, length: Int) -> Int { CSplice_move(from, to, length) }

    /// Reads up to `buffer.count` bytes out of the pipe with read(2) (the copy path's way to take
    /// what splicing left in it): the count, or 0 when it is empty.
    func drain(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = Glibc.read(readEnd, buffer.baseAddress, buffer.count)
        return max(0, count)
    }
}
