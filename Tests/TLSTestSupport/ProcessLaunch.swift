import Foundation

/// Starting a test server as a process and waiting for the line that says it is ready.
package enum ProcessLaunch {
    package struct Failure: Error, CustomStringConvertible {
        package var message: String
        package var description: String { message }
    }

    /// Runs `process` with standard output and error going to `outputPath` (a file, never a pipe: a
    /// pipe nobody drains would stall a chatty server), then reads that file until `ready` finds
    /// what it waits for in it. A process that exits first, or is not ready within `timeout`
    /// seconds, is killed and reported with what it printed.
    package static func start<Value>(
        _ process: Process, outputPath: String, name: String, timeout: Double = 20,
        ready: (String) -> Value?
    ) throws -> Value {
        guard FileManager.default.createFile(atPath: outputPath, contents: Data()),
            let output = FileHandle(forWritingAtPath: outputPath)
        else { throw Failure(message: "cannot create \(outputPath)") }
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try output.close()
        let deadline = Date().addingTimeInterval(timeout)
        var text = ""
        while Date() < deadline {
            text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            if let value = ready(text) { return value }
            guard !process.hasExited else { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        if !process.hasExited { kill(process.processIdentifier, SIGKILL) }
        let status = process.waitForExit()
        throw Failure(message: "\(name) did not start (status \(status)): \(text)")
    }

    /// The port in the first "<marker>PORT" of `text`, once the line is complete.
    package static func port(after marker: String, in text: String) -> UInt16? {
        guard let range = text.range(of: marker),
            let end = text[range.upperBound...].firstIndex(where: \.isNewline)
        else { return nil }
        return UInt16(text[range.upperBound..<end])
    }
}
