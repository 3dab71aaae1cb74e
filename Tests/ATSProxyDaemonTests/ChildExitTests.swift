import Foundation
import TLSTestSupport
import Testing

/// The harness learns that a program exited from the kernel, not from Foundation: Foundation's one
/// thread that notices children's exits blocks in `waitpid` on a child that has closed the
/// descriptors it inherited, until that child exits, and meanwhile no other child's exit is seen.
/// A full test run has such children (a browser, a server), and a daemon that had stopped was
/// taken for one that would not.
@Suite(.startsProcesses(timeLimit: .seconds(60)))
struct ChildExitTests {
    @Test("a program's exit is seen while another child that closed its descriptors still runs")
    func exitSeenPastABlockingChild() throws {
        // Closes every inherited descriptor, Foundation's exit socket with them, then stays.
        let blocker = Process()
        blocker.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        blocker.arguments = [
            "-c", "import os, time; os.closerange(3, 65536); print('closed', flush=True); time.sleep(120)",
        ]
        let ready = Pipe()
        blocker.standardOutput = ready
        try blocker.run()
        defer {
            kill(blocker.processIdentifier, SIGKILL)
            blocker.waitForExit()
        }
        #expect(String(decoding: ready.fileHandleForReading.readData(ofLength: 6), as: UTF8.self) == "closed")
        // Give Foundation's thread time to see the closed socket and block on the blocker.
        Thread.sleep(forTimeInterval: 0.5)

        let result = try runCommand("/bin/sh", ["-c", "exit 3"], timeLimit: 20)
        #expect(!result.killed)
        #expect(result.status == 3)
    }
}
