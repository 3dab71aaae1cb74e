import Foundation
import Glibc

/// A TCP server that records the first TLS record each client sends (its ClientHello, header
/// included, as it went over the wire) and then closes: for tests that measure a client's hello.
package final class HelloRecorder {
    package let port: UInt16
    private let listener: RawTCPServer
    private let store: Store

    package init() throws {
        let store = Store()
        self.store = store
        listener = try RawTCPServer { client in
            var received: [UInt8] = []
            while received.count < 5 || received.count < 5 + (Int(received[3]) << 8 | Int(received[4])) {
                guard let chunk = receiveAvailable(client, wait: 10), !chunk.isEmpty else { break }
                received += chunk
            }
            store.append(received)
        }
        port = listener.port
    }

    /// The records received so far, in the order the connections sent them.
    package var records: [[UInt8]] { store.records }

    private final class Store: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [[UInt8]] = []

        func append(_ record: [UInt8]) { lock.withLock { list.append(record) } }
        var records: [[UInt8]] { lock.withLock { list } }
    }
}
