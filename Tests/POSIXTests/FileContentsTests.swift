import Glibc
import POSIX
import Testing

/// The one file reader: whole regular files, with their mode; everything else refused by name.
@Suite struct FileContentsTests {
    /// A fresh directory under /tmp, removed by `body`'s caller.
    static func withDirectory(_ body: (String) throws -> Void) throws {
        var template = Array("/tmp/posix-tests-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        let directory = String(cString: try #require(made))
        defer { _ = system("rm -rf '\(directory)'") }
        try body(directory)
    }

    static func write(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
        _ = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        chmod(path, mode)
    }

    @Test("a regular file is read whole, with its mode")
    func regularFile() throws {
        try Self.withDirectory { directory in
            let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            Self.write(directory + "/a", bytes, mode: 0o640)
            let contents = try FileContents.read(directory + "/a", maximumSize: 1 << 20)
            #expect(contents.bytes == bytes)
            #expect(contents.mode & 0o777 == 0o640)
            #expect(try FileContents.read(directory + "/a", maximumSize: 200_000).bytes.count == 200_000)
        }
    }

    @Test("missing, a directory, a FIFO and a file over the limit are refused, each by name")
    func refusals() throws {
        try Self.withDirectory { directory in
            Self.write(directory + "/big", [UInt8](repeating: 1, count: 2048))
            mkfifo(directory + "/fifo", 0o600)
            let cases: [(String, FileReadError.Problem, String)] = [
                (directory + "/absent", .open(ENOENT), "No such file or directory"),
                (directory, .isDirectory, "is a directory"),
                (directory + "/fifo", .notRegularFile, "is not a regular file"),
                (directory + "/big", .tooLarge(maximumSize: 1024), "larger than 1024 bytes"),
            ]
            for (path, problem, reason) in cases {
                #expect {
                    try FileContents.read(path, maximumSize: 1024)
                } throws: { error in
                    let error = error as? FileReadError
                    return error?.problem == problem && error?.reason == reason && error?.path == path
                }
            }
        }
    }
}
