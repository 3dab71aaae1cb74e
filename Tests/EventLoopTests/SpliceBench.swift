import Dispatch
import EventLoop
import Foundation
import Glibc
import Testing

/// Not a timed test: prints what splice and the copy path cost on loopback, for the README.
/// `SPLICE_BENCH=1 swift test --filter SpliceBench`.
@Suite(
    "splice vs copy (SPLICE_BENCH=1)", .enabled(if: ProcessInfo.processInfo.environment["SPLICE_BENCH"] != nil),
    .serialized)
struct SpliceBench {
    @Test(
        "1 GiB one way",
        arguments: [
            (SpliceRelay.Method.copy, 65_536), (SpliceRelay.Method.splice, 65_536),
            (SpliceRelay.Method.splice, 1 << 20),
        ])
    func oneWay(method: SpliceRelay.Method, pipe: Int) throws {
        let (first, peerA) = try loopbackPair()
        let (second, peerB) = try loopbackPair()
        defer {
            close(peerA)
            close(peerB)
        }
        let (loop, report) = try startRelay(first: first, second: second, method: method, pipeCapacity: pipe)
        defer { loop.stop() }
        let total = 1 << 30
        let cpuBefore = Self.cpuSeconds()
        let start = DispatchTime.now()
        let group = DispatchGroup()
        onThread(group) {
            var block = [UInt8](repeating: 7, count: 1 << 20)
            var sent = 0
            while sent < total {
                block.withUnsafeMutableBytes { _ = sendAll(peerA, UnsafeRawBufferPointer($0)) }
                sent += block.count
            }
            shutdown(peerA, Int32(SHUT_WR))
        }
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var received = 0
        while true {
            let count = recv(peerB, &chunk, chunk.count, 0)
            if count <= 0 { break }
            received += count
        }
        group.wait()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        let cpu = Self.cpuSeconds() - cpuBefore
        shutdown(peerB, Int32(SHUT_WR))
        let loopCPU = report.waitForEnd()?.loopCPU ?? 0
        print(
            "splice-bench \(method) pipe \(pipe / 1024) KiB: \(received >> 20) MiB in \(String(format: "%.2f", seconds)) s = \(String(format: "%.0f", Double(received) / seconds / 1e6)) MB/s; process CPU \(String(format: "%.2f", cpu)) s, relay loop CPU \(String(format: "%.2f", loopCPU)) s"
        )
        #expect(received == total)
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(
            usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
