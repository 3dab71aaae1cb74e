/// What the bytes a control client has sent so far ask for: the server's half of the protocol
/// (``ControlCommand``), without the socket, so the daemon and the fuzz target run the same code.
package enum ControlRequest: Sendable, Equatable {
    /// No newline yet, and still short enough to wait for one.
    case incomplete
    /// More than ``ControlCommand/maximumRequestBytes`` bytes and no newline among them.
    case tooLong
    /// A known command's name on the first line.
    case command(ControlCommand)
    /// A first line that names no command (as text, for the refusal).
    case unknown(String)

    /// Reads `bytes`, the start of what the client sent (the daemon peeks at most
    /// ``ControlCommand/maximumRequestBytes`` + 1 bytes). Only the first line counts; spaces, tabs
    /// and a CR around the name are dropped (a client may send CRLF), and anything after the first
    /// newline is ignored.
    package init(parsing bytes: some Collection<UInt8>) {
        let bytes = Array(bytes.prefix(ControlCommand.maximumRequestBytes + 1))
        guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) else {
            self = bytes.count > ControlCommand.maximumRequestBytes ? .tooLong : .incomplete
            return
        }
        let isBlank: (UInt8) -> Bool = {
            $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r")
        }
        let name = String(
            decoding: bytes[..<newline].drop(while: isBlank).reversed().drop(while: isBlank).reversed(), as: UTF8.self)
        self = ControlCommand(rawValue: name).map(ControlRequest.command) ?? .unknown(name)
    }
}
