import EventLoop
import Foundation
import Glibc
import Testing

/// The control socket's file: permissions, a stale file replaced, a live one or a non-socket refused.
@Suite("Unix socket files")
struct UnixSocketFileTests {
    static func temporaryPath() -> String { "/tmp/atsproxy-unix-\(UUID().uuidString.prefix(8)).sock" }

    @Test("the socket is created with the permissions asked for")
    func permissions() throws {
        let path = Self.temporaryPath()
        let descriptor = try UnixSocketFile.listen(at: path, permissions: 0o660)
        defer {
            close(descriptor)
            unlink(path)
        }
        var info = stat()
        #expect(lstat(path, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFSOCK)
        #expect(info.st_mode & 0o777 == 0o660)
    }

    @Test("a socket file nobody answers on (a daemon that died) is replaced; one somebody answers on is refused")
    func staleAndLive() throws {
        let path = Self.temporaryPath()
        let first = try UnixSocketFile.listen(at: path, permissions: 0o600)
        defer { unlink(path) }
        #expect(throws: EventError.self) { _ = try UnixSocketFile.listen(at: path, permissions: 0o600) }
        close(first)  // The file stays behind, as after a crash.
        let second = try UnixSocketFile.listen(at: path, permissions: 0o600)
        close(second)
    }

    @Test("a regular file in the way is not deleted")
    func regularFile() throws {
        let path = Self.temporaryPath()
        #expect(FileManager.default.createFile(atPath: path, contents: Data("keep me".utf8)))
        defer { unlink(path) }
        let error = try #require(throws: EventError.self) {
            _ = try UnixSocketFile.listen(at: path, permissions: 0o600)
        }
        #expect(error.description.contains("not a socket"))
        #expect((try? String(contentsOfFile: path, encoding: .utf8)) == "keep me")
    }
}
