import ATSPolicy
import ControlProtocol
import EventLoop
import Glibc
import TextFormats

/// The daemon's control socket (see ``ControlCommand`` for the protocol): one command line in, one
/// JSON line out, then close. Runs on the main thread's event base, never on a proxy loop, so a slow
/// reload cannot stall a client. Owns the socket file and unlinks it when it goes.
final class ControlServer {
    let path: String
    private var listener: Listener?
    private var connections: [ObjectIdentifier: SocketStream] = [:]
    private let base: EventBase
    private let handle: (ControlCommand) -> JSONValue
    /// Whether this server bound the socket file at `path`, and so may remove it. Until then the file
    /// there (if any) belongs to someone else: a running daemon's socket, or a file that is not a socket.
    private var ownsSocketFile = false

    /// How long a control client may take to send its command line.
    static let requestTimeout: Duration = .seconds(5)

    init(base: EventBase, path: String, handle: @escaping (ControlCommand) -> JSONValue) throws(EventError) {
        self.base = base
        self.path = path
        self.handle = handle
        // /run/atsproxy exists under systemd (RuntimeDirectory=); a daemon started by hand as root
        // creates it. One level only: a mistyped deeper path is an error, not a tree of directories.
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        if !directory.isEmpty, access(directory, F_OK) != 0 { mkdir(directory, 0o750) }
        let descriptor = try UnixSocketFile.listen(at: path, permissions: 0o660)
        ownsSocketFile = true
        listener = try Listener(base: base, boundDescriptor: descriptor) { [unowned self] descriptor, _ in
            accept(descriptor)
        }
    }

    deinit { close() }

    /// Stops listening, drops the clients and removes the socket file; once.
    func close() {
        listener = nil
        for connection in connections.values { connection.close() }
        connections.removeAll()
        // deinit also runs when init throws once every stored property is set, as when another
        // daemon answers on `path`: removing the file then would cut that daemon off its socket.
        if ownsSocketFile { unlink(path) }
        ownsSocketFile = false
    }

    private func accept(_ descriptor: Int32) {
        guard let connection = try? SocketStream(base: base, descriptor: descriptor) else { return }
        let id = ObjectIdentifier(connection)
        connections[id] = connection
        connection.setTimeouts(read: Self.requestTimeout, write: Self.requestTimeout)
        connection.onReadable = { [unowned self] connection in readRequest(connection) }
        connection.onEvent = { [unowned self] connection, _ in drop(connection) }
        connection.setReading(true)
    }

    private func readRequest(_ connection: any ByteStream) {
        switch ControlRequest(parsing: connection.peek(maximum: ControlCommand.maximumRequestBytes + 1)) {
        case .incomplete:
            return
        case .tooLong:
            answer(
                connection,
                Self.refusal(
                    command: nil, "the request line is longer than \(ControlCommand.maximumRequestBytes) bytes"))
        case .unknown(let name):
            let known = ControlCommand.allCases.map(\.rawValue).joined(separator: ", ")
            answer(connection, Self.refusal(command: nil, "unknown command \"\(name)\"; the commands are: \(known)"))
        case .command(let command):
            answer(connection, handle(command))
        }
    }

    private func answer(_ connection: any ByteStream, _ response: JSONValue) {
        connection.setReading(false)
        connection.onReadable = nil
        connection.write(response.serializedBytes + [UInt8(ascii: "\n")])
        connection.setDrainedMark(0)
        connection.onDrained = { [unowned self] connection in drop(connection) }
    }

    private func drop(_ connection: any ByteStream) {
        connection.close()
        connections[ObjectIdentifier(connection)] = nil
    }

    static func refusal(command: ControlCommand?, _ reason: String) -> JSONValue {
        .object([("ok", false), ("command", .optional(command?.rawValue)), ("error", .string(reason))])
    }
}
