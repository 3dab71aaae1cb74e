import Foundation
import POSIX

/// The most resident memory a process reaches while a test drives it: sampled from /proc every
/// 100 ms on a thread of its own, from `init` until ``stop()``, whatever the machine's pace.
final class PeakResidentMemory: Sendable {
    let pid: Int32
    /// RSS when sampling began, in KiB.
    let start: Int
    private let peak: Locked<Int>
    private let done = DispatchSemaphore(value: 0)
    private let sampler = DispatchGroup()

    init(pid: Int32) {
        self.pid = pid
        start = Self.residentKiB(pid)
        peak = Locked(start)
        sampler.enter()
        Thread.detachNewThread { [self] in
            repeat {
                let now = Self.residentKiB(pid)
                peak.withLock { $0 = max($0, now) }
            } while done.wait(timeout: .now() + 0.1) == .timedOut
            sampler.leave()
        }
    }

    /// Stops sampling: the peak in KiB.
    func stop() -> Int {
        done.signal()
        sampler.wait()
        return peak.withLock { $0 }
    }

    /// A process's resident memory now (VmRSS), in KiB; 0 once it is gone.
    static func residentKiB(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
}
