import Foundation

/// The result of running a program to completion.
public struct CommandResult: Sendable {
    public var status: Int32
    public var standardOutput: String
    public var standardError: String
}

/// Runs `executable` with `arguments`, with output captured through files (a pipe left undrained can
/// stall a chatty program), and returns when it exits.
public func runCommand(_ executable: String, _ arguments: [String]) throws -> CommandResult {
    let directory = FileManager.default.temporaryDirectory.path + "/atsproxy-command-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let outPath = directory + "/out"
    let errPath = directory + "/err"
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
    let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    try out.close()
    try err.close()
    return CommandResult(
        status: process.terminationStatus,
        standardOutput: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
        standardError: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
}
