import Foundation
import Glibc

/// An `http` server on 127.0.0.1 that answers every GET with one body, as a CA's CA Issuers URL
/// does (or with another status), and counts the requests it got: for the tests of fetching a
/// missing intermediate.
package final class CAIssuersServer: Sendable {
    private let server: RawTCPServer
    private let counter = RequestCounter()
    package var port: UInt16 { server.port }

    /// - Parameters:
    ///   - body: what every request gets.
    ///   - status: the status line's code and reason.
    package init(body: [UInt8], status: String = "200 OK") throws {
        let counter = self.counter
        server = try RawTCPServer { descriptor in
            var head: [UInt8] = []
            var byte: UInt8 = 0
            while !head.ends(with: Array("\r\n\r\n".utf8)), head.count < 16 * 1024, recv(descriptor, &byte, 1, 0) == 1 {
                head.append(byte)
            }
            counter.add(String(decoding: head, as: UTF8.self))
            let answer =
                Array(
                    "HTTP/1.0 \(status)\r\nContent-Type: application/pkix-cert\r\nContent-Length: \(body.count)\r\n\r\n"
                        .utf8)
                + body
            sendAll(descriptor, answer)
        }
    }

    /// `http://127.0.0.1:PORT/path`.
    package func url(_ path: String = "/inter.der") -> String { "http://127.0.0.1:\(port)\(path)" }

    /// The request heads received so far.
    package var requests: [String] { counter.heads }
}

private final class RequestCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var received: [String] = []

    func add(_ head: String) { lock.withLock { received.append(head) } }
    var heads: [String] { lock.withLock { received } }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}

/// The chains of the missing-intermediate tests: a root, an intermediate the server will leave out,
/// and a leaf naming where to fetch it.
extension CertificateFactory {
    /// Makes `root` and `inter` (under it) and returns the intermediate's DER, for a ``CAIssuersServer``.
    package func rootAndIntermediate() throws -> [UInt8] {
        try rootCA("root")
        try certificate("inter", issuer: "root", extensions: [], isCA: true)
        try openssl(["x509", "-in", "inter.pem", "-outform", "DER", "-out", "inter.der"])
        return try bytes("inter.der")
    }

    /// A leaf `leaf.pem` for `host` under `inter`, with `caIssuers` as its CA Issuers URL.
    package func leafNamingIssuer(host: String, caIssuers: String) throws {
        try certificate(
            "leaf", issuer: "inter",
            extensions: [
                "subjectAltName=DNS:\(host)", "extendedKeyUsage=serverAuth",
                "authorityInfoAccess=caIssuers;URI:\(caIssuers)",
            ])
    }
}
