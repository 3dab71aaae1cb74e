import Foundation
import Testing

/// For a test (or every test of a suite) that starts processes: daemons, openssl servers, curl. Each
/// test case gets a time limit counted from the moment its body starts, and its body runs on a
/// thread of its own, with at most one such body per core at a time.
///
/// Why not Swift Testing's `.timeLimit`: these tests are synchronous and block the thread they run
/// on. On the cooperative pool (one thread per core) they fill it, and the runner's own jobs queue
/// behind the other tests' bodies: the timer starts when a case is scheduled, and the resumption
/// that would cancel it when the case ends waits until the pool frees up. On 2 cores a whole run
/// recorded "Time limit was exceeded: 60 s" for 18 cases that each took a few seconds. Here the
/// bodies leave the pool free, so the clock that counts them and the runner both keep time.
///
/// The limit cannot stop a synchronous body: it records an issue naming the test, so a hang
/// that a bounded wait (``runCommand(_:_:input:directory:timeLimit:sourceLocation:)``,
/// `DaemonProcess.terminate`) did not catch is at least attributed.
package struct ProcessTestTrait: TestTrait, SuiteTrait, TestScoping {
    package var timeLimit: Duration

    package var isRecursive: Bool { true }

    /// Only test cases get a scope: a suite's or a parameterized test's own scope would hold a
    /// slot of the gate while its cases wait for one.
    package func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        await ProcessTestGate.shared.enter()
        do {
            try await runTimed(test, function)
        } catch {
            await ProcessTestGate.shared.leave()
            throw error
        }
        await ProcessTestGate.shared.leave()
    }

    private func runTimed(_ test: Test, _ function: @Sendable () async throws -> Void) async throws {
        let limit = timeLimit
        try await withThrowingTaskGroup(of: Void.self) { group in
            // A child task inherits the test's task-locals, so the issue is the test case's.
            group.addTask {
                try await Task.sleep(for: limit)
                Issue.record(
                    "time limit exceeded: still running \(limit) after the test case's body started",
                    sourceLocation: test.sourceLocation)
            }
            defer { group.cancelAll() }
            try await withTaskExecutorPreference(ThreadOfItsOwn()) { try await function() }
        }
    }
}

extension Trait where Self == ProcessTestTrait {
    /// See ``ProcessTestTrait``.
    package static func startsProcesses(timeLimit: Duration) -> Self { ProcessTestTrait(timeLimit: timeLimit) }
}

/// At most one process test body per core at once, as when they ran on the cooperative pool: more
/// at once would only slow each one (and its openssl key generation, its curl) towards its limit.
actor ProcessTestGate {
    static let shared = ProcessTestGate(width: max(1, ProcessInfo.processInfo.activeProcessorCount))

    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(width: Int) { free = width }

    func enter() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func leave() {
        if waiting.isEmpty {
            free += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}

/// Runs the jobs of the tasks that prefer it on a serial dispatch queue: a thread outside the
/// cooperative pool, which a blocking test body may hold as long as it likes.
final class ThreadOfItsOwn: TaskExecutor {
    private let queue = DispatchQueue(label: "atsproxy.process-test")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
