import Foundation
import Testing

/// The result of running a program to completion.
package struct CommandResult: Sendable {
    /// The exit status; -1 when the program outlived its time limit and was killed.
    package var status: Int32
    package var standardOutput: String
    package var standardError: String
    /// Standard output as bytes, for programs whose output is not text.
    package var standardOutputBytes: Data
    /// Whether the program was still running at its time limit and was killed.
    package var killed: Bool
}

/// Runs `executable` with `arguments` (in `directory`, with `input` on its standard input), with
/// output captured through files (a pipe left undrained can stall a chatty program), and returns
/// when it exits. A program still running after `timeLimit` seconds is killed and the test gets an
/// issue: every caller expects its program to exit by itself, and a hung one must fail the test
/// rather than hang the run.
package func runCommand(
    _ executable: String, _ arguments: [String], input: Data? = nil, directory: String? = nil, timeLimit: Double = 60,
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> CommandResult {
    let scratch = FileManager.default.temporaryDirectory.path + "/atsproxy-command-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    let outPath = scratch + "/out"
    let errPath = scratch + "/err"
    let inPath = scratch + "/in"
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
    let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    process.standardOutput = out
    process.standardError = err
    // Input from a file too: writing a pipe before the program reads would block on a large input.
    if let input {
        _ = FileManager.default.createFile(atPath: inPath, contents: input)
        process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: inPath))
    } else {
        process.standardInput = FileHandle.nullDevice
    }
    try process.run()
    let exited = process.waitUntilExit(killingAfter: timeLimit)
    try out.close()
    try err.close()
    let output = (try? Data(contentsOf: URL(fileURLWithPath: outPath))) ?? Data()
    let errors = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
    if !exited {
        let command = ([executable] + arguments).joined(separator: " ")
        Issue.record(
            "\(command) was still running after \(timeLimit) s and was killed; stderr: \(errors)",
            sourceLocation: sourceLocation)
    }
    return CommandResult(
        status: exited ? process.terminationStatus : -1, standardOutput: String(decoding: output, as: UTF8.self),
        standardError: errors, standardOutputBytes: output, killed: !exited)
}

extension Process {
    /// Waits for the process to exit, at most `seconds`; if it is still running then, kills it with
    /// SIGKILL (which cannot be blocked or ignored) and reaps it. Returns whether it exited by itself.
    package func waitUntilExit(killingAfter seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        let exited = !isRunning
        if !exited { kill(processIdentifier, SIGKILL) }
        waitUntilExit()
        return exited
    }
}
