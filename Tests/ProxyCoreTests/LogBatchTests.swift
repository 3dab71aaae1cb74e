import EventLoop
import Foundation
import Testing

@testable import ProxyCore

/// ``LogBatch``: a loop's lines wait for its next turn and go out in one write, and none is lost
/// when the turn never comes. The loop's turn is a timer the test fires (``Turn``); the file is real.
@Suite("log batch")
struct LogBatchTests {
    /// The loop's next turn, fired by the test.
    final class Turn: LoopTimer {
        private(set) var armed = false
        private(set) var schedules = 0
        private let onFire: () -> Void

        init(_ onFire: @escaping () -> Void) { self.onFire = onFire }

        func schedule(after delay: Duration) {
            #expect(delay == .zero)
            armed = true
            schedules += 1
        }

        func cancel() { armed = false }

        func comes() {
            guard armed else { return }
            armed = false
            onFire()
        }
    }

    /// A batch writing to a fresh file, and the turn it scheduled.
    final class Rig {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("log-batch-\(UUID().uuidString).log")
            .path
        var turn: Turn?
        var batch: LogBatch?

        init(withTurn: Bool = true) throws {
            let writer = try LogWriter(path: path)
            batch = LogBatch(writer: writer) { [self] onFire in
                guard withTurn else { return nil }
                let turn = Turn(onFire)
                self.turn = turn
                return turn
            }
        }

        deinit { try? FileManager.default.removeItem(atPath: path) }

        var written: [String] {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            return text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        }
    }

    @Test("lines wait for the loop's next turn, then are written together, in order")
    func waitForTurn() throws {
        let rig = try Rig()
        rig.batch?.append(Array("{\"n\":1}".utf8))
        rig.batch?.append(Array("{\"n\":2}".utf8))
        rig.batch?.append(Array("{\"n\":3}".utf8))
        #expect(rig.written == [""])
        #expect(rig.turn?.schedules == 1)
        rig.turn?.comes()
        #expect(rig.written == ["{\"n\":1}", "{\"n\":2}", "{\"n\":3}", ""])
        // The next line asks for another turn.
        rig.batch?.append(Array("{\"n\":4}".utf8))
        #expect(rig.turn?.schedules == 2)
        rig.turn?.comes()
        #expect(rig.written.suffix(2) == ["{\"n\":4}", ""])
    }

    @Test("a burst past the limit is written without waiting")
    func limit() throws {
        let rig = try Rig()
        let line = Array(repeating: UInt8(ascii: "x"), count: 1000)
        let count = LogBatch.limit / 1001 + 1
        for _ in 0..<count { rig.batch?.append(line) }
        #expect(rig.written.count == count + 1)
        #expect(rig.turn?.armed == false)
    }

    @Test("a batch that goes without a turn writes what waited")
    func releasedWithoutTurn() throws {
        let rig = try Rig()
        rig.batch?.append(Array("{\"last\":true}".utf8))
        rig.batch = nil
        #expect(rig.written == ["{\"last\":true}", ""])
    }

    @Test("once the loop is ending, waiting lines are written and later ones at once")
    func writeThrough() throws {
        let rig = try Rig()
        rig.batch?.append(Array("{\"n\":1}".utf8))
        rig.batch?.writeThrough()
        #expect(rig.written == ["{\"n\":1}", ""])
        rig.batch?.append(Array("{\"n\":2}".utf8))
        #expect(rig.written == ["{\"n\":1}", "{\"n\":2}", ""])
        #expect(rig.turn?.schedules == 1)
    }

    @Test("without a timer each line is written at once")
    func noTimer() throws {
        let rig = try Rig(withTurn: false)
        rig.batch?.append(Array("{\"n\":1}".utf8))
        #expect(rig.written == ["{\"n\":1}", ""])
    }
}
