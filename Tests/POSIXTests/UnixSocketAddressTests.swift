import Glibc
import POSIX
import Testing

/// Unix socket addresses from their text: a path, or `@name` where the abstract namespace is allowed.
@Suite struct UnixSocketAddressTests {
    static let familySize = MemoryLayout<sa_family_t>.size

    @Test(
        "which texts make an address",
        arguments: [
            ("/run/atsproxy/control.sock", false, true),
            ("relative.sock", false, true),
            ("", false, false),
            (String(repeating: "a", count: 107), false, true),
            (String(repeating: "a", count: 108), false, false),
            ("@systemd-notify", false, true),  // a path that starts with @, without the abstract namespace
            ("@systemd-notify", true, true),
            ("@", true, false),
            ("/a\u{0}b", false, false),
        ] as [(String, Bool, Bool)])
    func accepted(text: String, abstract: Bool, made: Bool) {
        #expect((UnixSocketAddress(text, allowsAbstract: abstract) != nil) == made)
    }

    @Test("a path ends with a NUL; an abstract name starts with one and has none at its end")
    func layout() throws {
        let path = try #require(UnixSocketAddress("/x"))
        #expect(Array(path.bytes.dropFirst(Self.familySize)) == [UInt8(ascii: "/"), UInt8(ascii: "x"), 0])
        let abstract = try #require(UnixSocketAddress("@x", allowsAbstract: true))
        #expect(Array(abstract.bytes.dropFirst(Self.familySize)) == [0, UInt8(ascii: "x")])
        #expect(path.withSockaddr { Int($0.pointee.sa_family) == Int(AF_UNIX) && $1 == socklen_t(path.bytes.count) })
    }

    @Test("errno classes: would-block and transient")
    func errnoClasses() {
        #expect(Errno.wouldBlock(EAGAIN) && Errno.wouldBlock(EWOULDBLOCK) && !Errno.wouldBlock(EINTR))
        #expect(Errno.isTransient(EINTR) && Errno.isTransient(EAGAIN) && !Errno.isTransient(ECONNRESET))
        #expect(Errno.message(ENOENT) == "No such file or directory")
    }
}
