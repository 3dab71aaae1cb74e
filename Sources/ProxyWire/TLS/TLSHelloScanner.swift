/// Finds the hello in one direction of a proxied TCP stream, without a TLS library.
///
/// One direction of a tunnel. Feed every chunk of bytes as it passes; the scanner copies only
/// the handshake bytes it needs and stops looking once it has its answer.
///
/// The client-to-server direction reports the first ClientHello; the server-to-client direction
/// reports the ServerHello that fixes the version and cipher suite, reading past a
/// HelloRetryRequest (RFC 8446 §4.1.4) to the second ServerHello. The result never depends on
/// how the stream was cut into chunks. Memory is bounded by `maximumBufferedBytes` plus a few
/// bytes of record header; a hello larger than that is reported as `.failed`.
package struct TLSHelloScanner: Sendable {
    package enum Direction: Sendable { case clientToServer, serverToClient }

    package let direction: Direction
    /// The most handshake bytes (one hello, its 4-byte header included) the scanner will buffer.
    package let maximumBufferedBytes: Int
    /// The answer so far: `.needMoreData` until the scanner has decided, then final.
    package private(set) var state: TLSScanState = .needMoreData
    /// Once the state is `.failed`, the alert a TLS server would answer that fault with (a record over
    /// 2^14 bytes: `record_overflow`; a server_name that is not a host name: `unrecognized_name`…).
    package private(set) var failureAlert: TLSAlertDescription?

    /// The largest ClientHello the scanner reads by default, its 4-byte header included: OpenSSL's
    /// servers accept a message body of up to 131,396 bytes (CLIENT_HELLO_MAX_LENGTH), so a hello
    /// any of them would take must be readable here too, or the proxy could not judge it.
    package static let maximumClientHelloBytes = 4 + 131_396
    /// The largest ServerHello read by default: far above any real one (OpenSSL's clients stop at 20,000).
    package static let maximumServerHelloBytes = 65_536

    private enum Phase: Sendable {
        case recordHeader
        case handshakeBody(remaining: Int)
        case alertBody(remaining: Int)
        case changeCipherSpecBody
        case sslv2Body(remaining: Int)
    }

    private var phase: Phase = .recordHeader
    /// The record header being read, or an alert record's two bytes.
    private var pending = TLSPendingBytes()
    /// An SSL 2.0-format ClientHello's message, which has no handshake header to reassemble.
    private var sslv2Message: [UInt8] = []
    private var reassembler: TLSHandshakeReassembler
    private var receivedAnyBytes = false
    private var sawRecordHeader = false
    private var sawHelloRetryRequest = false

    /// - Parameter maximumBufferedBytes: the largest hello read, its handshake header included; by
    ///   default ``maximumClientHelloBytes`` or ``maximumServerHelloBytes``, by direction.
    package init(direction: Direction, maximumBufferedBytes: Int? = nil) {
        self.direction = direction
        let limit =
            maximumBufferedBytes
            ?? (direction == .clientToServer ? Self.maximumClientHelloBytes : Self.maximumServerHelloBytes)
        self.maximumBufferedBytes = max(0, limit)
        self.reassembler = TLSHandshakeReassembler(limit: self.maximumBufferedBytes)
    }

    /// Scans the next chunk of this direction's bytes. After a final answer, returns it again
    /// without looking at the bytes.
    package mutating func feed(_ bytes: some Collection<UInt8>) -> TLSScanState { scan(ArraySlice(bytes)) }

    // The proxy's own buffers are arrays and slices of them, which the scan reads in place: a
    // hello that arrives whole is parsed where it lies, without being copied (and a generic
    // method would not be specialised in the calling module).
    package mutating func feed(_ bytes: [UInt8]) -> TLSScanState { scan(bytes[...]) }
    package mutating func feed(_ bytes: ArraySlice<UInt8>) -> TLSScanState { scan(bytes) }

    private mutating func scan(_ bytes: ArraySlice<UInt8>) -> TLSScanState {
        guard !isFinished else { return state }
        var rest = bytes[...]
        if !rest.isEmpty { receivedAnyBytes = true }
        while !rest.isEmpty, !isFinished {
            rest = step(rest)
        }
        if isFinished { releaseBuffers() }
        return state
    }

    /// Tells the scanner that this direction's stream has ended (FIN or reset) and returns the
    /// final answer: `.notTLS` if not a byte arrived, `.failed` if the hello was cut short.
    package mutating func finish() -> TLSScanState {
        guard !isFinished else { return state }
        if !receivedAnyBytes {
            state = .notTLS(reason: "the stream ended before any bytes arrived")
        } else if !sawRecordHeader {
            fail("the stream ended inside the first TLS record header")
        } else {
            fail("the stream ended before the \(helloName) was complete")
        }
        releaseBuffers()
        return state
    }

    private var isFinished: Bool {
        if case .needMoreData = state { false } else { true }
    }

    private var helloName: String { direction == .clientToServer ? "ClientHello" : "ServerHello" }
    private var expectedHelloType: UInt8 {
        direction == .clientToServer ? TLSHandshakeType.clientHello : TLSHandshakeType.serverHello
    }

    /// Handles bytes for the current phase and returns those it did not use.
    private mutating func step(_ input: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        switch phase {
        case .recordHeader:
            let part = input.prefix(TLSRecordHeader.size - pending.count)
            pending.append(contentsOf: part)
            classifyHeader()
            return input.dropFirst(part.count)

        case .handshakeBody(let remaining):
            let (consumed, event) = reassembler.consume(input.prefix(remaining), expecting: expectedHelloType)
            phase = consumed == remaining ? .recordHeader : .handshakeBody(remaining: remaining - consumed)
            handle(event)
            return input.dropFirst(consumed)

        case .alertBody(let remaining):
            let part = input.prefix(remaining)
            pending.append(contentsOf: part)
            phase = .alertBody(remaining: remaining - part.count)
            if pending.count == 2 {
                let alert = TLSAlert(level: pending[0], description: pending[1])
                let sender = direction == .clientToServer ? "client" : "server"
                fail("the \(sender) sent a TLS alert: \(alert.summary)")
            }
            return input.dropFirst(part.count)

        case .changeCipherSpecBody:
            // RFC 8446 §5: a compatibility-mode change_cipher_spec record holds the single byte 1.
            if let value = input.first, value != 1 {
                fail("a change_cipher_spec record holds \(TLSHex.uint8(value)), not 0x01")
            }
            phase = .recordHeader
            return input.dropFirst()

        case .sslv2Body(let remaining):
            let part = input.prefix(remaining)
            sslv2Message.append(contentsOf: part)
            phase = .sslv2Body(remaining: remaining - part.count)
            if part.count == remaining {
                do throws(TLSParseError) {
                    state = .clientHello(try SSLv2ClientHelloParser.parse(sslv2Message[...]))
                } catch {
                    fail("malformed SSLv2-compatible ClientHello: \(error.reason)")
                }
            }
            return input.dropFirst(part.count)
        }
    }

    private mutating func classifyHeader() {
        let verdict = TLSRecordHeader.classify(
            pending, isFirstRecord: !sawRecordHeader, acceptsSSLv2Hello: direction == .clientToServer)
        switch verdict {
        case .incomplete:
            break
        case .notTLS(let reason):
            state = .notTLS(reason: reason)
        case .failed(let reason):
            fail(reason)
        case .record(let header):
            pending.removeAll()
            sawRecordHeader = true
            begin(header)
        case .sslv2ClientHello(let messageLength):
            sawRecordHeader = true
            guard messageLength <= maximumBufferedBytes else {
                fail(
                    "the SSLv2-compatible ClientHello declares \(messageLength) bytes, more than the "
                        + "\(maximumBufferedBytes)-byte buffering limit", alert: .illegalParameter)
                return
            }
            // The header's last three bytes were the message's msg_type and version.
            sslv2Message.reserveCapacity(messageLength)
            sslv2Message.append(contentsOf: pending[2...])
            pending.removeAll()
            phase = .sslv2Body(remaining: messageLength - 3)
        }
    }

    /// Decides what a record's body means before any of it is read.
    private mutating func begin(_ header: TLSRecordHeader) {
        let length = header.length
        switch header.contentType {
        case TLSContentType.handshake:
            guard length > 0 else {
                return fail("a handshake record is empty, which RFC 8446 §5.1 forbids", alert: .unexpectedMessage)
            }
            guard length <= TLSRecordHeader.maximumPlaintextLength else {
                return fail(
                    "handshake record length \(length) exceeds 16384, the most a plaintext record may "
                        + "carry (RFC 8446 §5.1)", alert: .recordOverflow)
            }
            phase = .handshakeBody(remaining: length)

        case TLSContentType.alert:
            // RFC 8446 §5.1: alerts are never fragmented or coalesced, so a plaintext alert record
            // holds exactly one level byte and one description byte.
            guard length == 2 else { return fail("alert record length \(length) is not 2") }
            phase = .alertBody(remaining: 2)

        case TLSContentType.changeCipherSpec where direction == .serverToClient && sawHelloRetryRequest:
            // RFC 8446 Appendix D.4: in middlebox compatibility mode the server sends a dummy
            // change_cipher_spec right after its HelloRetryRequest; it carries nothing.
            guard !reassembler.isInsideMessage else {
                return fail("a change_cipher_spec record interrupted a handshake message (RFC 8446 §5.1)")
            }
            guard length == 1 else { return fail("change_cipher_spec record length \(length) is not 1") }
            phase = .changeCipherSpecBody

        default:
            let name = TLSRegistryNames.contentType(header.contentType)
            let article = name.first.map { "aeiou".contains($0) } == true ? "an" : "a"
            fail(
                "\(article) \(name) record (content type \(header.contentType)) arrived before the \(helloName)",
                alert: .unexpectedMessage)
        }
    }

    private mutating func handle(_ event: TLSHandshakeReassembler.Event) {
        switch event {
        case .needMoreData:
            break
        case .unexpectedType(let type):
            fail(
                "expected a \(helloName) (handshake type \(expectedHelloType)) but got "
                    + "\(TLSRegistryNames.handshakeType(type)) (handshake type \(type))", alert: .unexpectedMessage)
        case .tooLarge(_, let declaredLength):
            fail(
                "the \(helloName) declares \(declaredLength) bytes, more than the "
                    + "\(maximumBufferedBytes)-byte buffering limit allows", alert: .illegalParameter)
        case .message(let message):
            accept(message)
        }
    }

    private mutating func accept(_ message: TLSHandshakeMessage) {
        do throws(TLSParseError) {
            switch direction {
            case .clientToServer:
                state = .clientHello(try ClientHelloParser.parse(message.body))
            case .serverToClient:
                var hello = try ServerHelloParser.parse(message.body)
                guard hello.isHelloRetryRequest else {
                    hello.helloRetryRequested = sawHelloRetryRequest
                    state = .serverHello(hello)
                    return
                }
                // RFC 8446 §4.1.4: a client receiving a second HelloRetryRequest must abort.
                guard !sawHelloRetryRequest else {
                    return fail("the server sent a second HelloRetryRequest, which RFC 8446 §4.1.4 forbids")
                }
                sawHelloRetryRequest = true
            }
        } catch {
            fail("malformed \(helloName): \(error.reason)", alert: error.alert)
        }
    }

    private mutating func fail(_ reason: String, alert: TLSAlertDescription = .decodeError) {
        state = .failed(reason: reason)
        failureAlert = alert
    }

    /// Once decided, the scanner holds no stream bytes.
    private mutating func releaseBuffers() {
        pending.removeAll()
        sslv2Message = []
        reassembler = TLSHandshakeReassembler(limit: maximumBufferedBytes)
        phase = .recordHeader
    }
}
