internal import CLibevent
import Glibc

/// A UDP socket on a base: each datagram that arrives is handed over whole, with its sender. The
/// single owner of its descriptor and its `event`, both freed in `deinit`.
///
/// Bound to `local` (a server's socket) or connected to `remote` (a client's, on a port the kernel
/// picks at random, so that answers from anyone else are dropped by the kernel).
package final class DatagramSocket {
    private let descriptor: Int32
    private var event: OpaquePointer?
    private let onDatagram: ([UInt8], SocketAddress) -> Void
    private var buffer = [UInt8](repeating: 0, count: 65536)

    package init(
        base: EventBase, local: SocketAddress? = nil, remote: SocketAddress? = nil,
        onDatagram: @escaping ([UInt8], SocketAddress) -> Void
    ) throws(EventError) {
        guard let family = (local ?? remote).map({ Int32($0.storage.ss_family) }) else {
            throw EventError("a datagram socket needs an address", errno: EINVAL)
        }
        let descriptor = socket(
            family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw EventError("socket(SOCK_DGRAM)", errno: errno) }
        // Bound and connected before the object exists, so a failure closes the descriptor here;
        // from then on deinit is the one place that closes it.
        do throws(EventError) {
            if var local {
                var on: Int32 = 1
                setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
                let length = socklen_t(local.length)
                let status = withUnsafePointer(to: &local.storage) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
                }
                guard status == 0 else { throw EventError("bind \(local) (UDP)", errno: errno) }
            }
            if var remote {
                let length = socklen_t(remote.length)
                let status = withUnsafePointer(to: &remote.storage) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, length) }
                }
                guard status == 0 else { throw EventError("connect \(remote) (UDP)", errno: errno) }
            }
        } catch {
            close(descriptor)
            throw error
        }
        self.descriptor = descriptor
        self.onDatagram = onDatagram
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard let event = event_new(base.raw, descriptor, Int16(EV_READ | EV_PERSIST), datagramCallback, context)
        else { throw EventError("event_new (UDP)") }
        self.event = event
        guard event_add(event, nil) == 0 else { throw EventError("event_add (UDP)") }
    }

    deinit {
        if let event { event_free(event) }
        close(descriptor)
    }

    /// The address the socket is bound to (after binding port 0, the port the kernel chose).
    package var localAddress: SocketAddress? { SocketAddress.local(of: descriptor) }

    /// Sends `bytes` as one datagram, to `destination` (nil: the connected peer). A datagram the
    /// kernel cannot take now is dropped, as the network may drop it: the sender retries.
    @discardableResult
    package func send(_ bytes: [UInt8], to destination: SocketAddress? = nil) -> Bool {
        guard var destination else {
            return bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                == bytes.count
        }
        let length = socklen_t(destination.length)
        let sent = withUnsafePointer(to: &destination.storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bytes.withUnsafeBytes {
                    sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), address, length)
                }
            }
        }
        return sent == bytes.count
    }

    /// Every datagram waiting, each handed over (a callback may free the socket: nothing is touched after).
    fileprivate func readable() {
        var received: [([UInt8], SocketAddress)] = []
        for _ in 0..<64 {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &storage) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(descriptor, bytes.baseAddress, bytes.count, 0, $0, &length)
                    }
                }
            }
            guard count >= 0 else { break }  // EAGAIN, or an ICMP error of a connected socket.
            received.append((Array(buffer[..<count]), SocketAddress(storage: storage, length: Int32(length))))
        }
        let handler = onDatagram
        for (bytes, sender) in received { handler(bytes, sender) }
    }
}

private func datagramCallback(_ descriptor: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    Unmanaged<DatagramSocket>.fromOpaque(context).takeUnretainedValue().readable()
}
