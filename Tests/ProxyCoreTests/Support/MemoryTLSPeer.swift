import COpenSSL
import CProxyShims
import Foundation

/// A real OpenSSL endpoint in the test's hands, over the test's side of a ``ScriptedStream``: a
/// device that verifies the minted certificate against the CA it was given (and sends the alert
/// OpenSSL sends when it cannot), an old client that speaks TLS 1.0 only, an origin server with a
/// certificate from ``CertificateFactory``. Nothing of the TLS is faked: the bytes the session sees
/// are OpenSSL's, moved through memory BIOs by ``exchange()``.
///
/// The proxy's own TLS types cannot play these parts: they never refuse a certificate (the proxy
/// judges facts, it does not fail handshakes), and they speak TLS 1.2-1.3 only.
final class MemoryTLSPeer {
    enum Role {
        /// A client that sends `serverName`; with `trusting`, it verifies the server's chain to that
        /// CA file and the name, and refuses the handshake (with OpenSSL's alert) when they fail.
        case client(serverName: String?, trusting: String?)
        /// A server presenting the chain in `certificate` (PEM) with its `key`.
        case server(certificate: String, key: String)
    }

    enum Handshake: Equatable {
        case underWay
        case complete
        /// OpenSSL's words for why it failed.
        case failed(String)
    }

    private let context: OpaquePointer
    private let ssl: OpaquePointer
    /// What the session sent, for OpenSSL to read; what OpenSSL wrote, for the session.
    private let incoming: OpaquePointer
    private let outgoing: OpaquePointer
    private let stream: ScriptedStream
    /// How much of the stream's ``ScriptedStream/delivered`` has been fed to OpenSSL.
    private var fed = 0
    private var endFed = false
    private(set) var handshake = Handshake.underWay
    /// The plaintext the peer has read from the session, in order.
    private(set) var received: [UInt8] = []
    /// Whether the session's close_notify (or its end without one) was read.
    private(set) var sawEnd = false
    /// Whether that end was close_notify: the session said it sent all it meant to.
    private(set) var sawCloseNotify = false
    private var pendingPlaintext: [UInt8] = []
    /// A silent peer moves nothing (``exchange()`` does nothing): a device that stopped mid-handshake.
    var isSilent = false

    /// - Parameters:
    ///   - versions: the protocol versions spoken (TLS1_VERSION ... TLS1_3_VERSION).
    ///   - ciphers: an OpenSSL cipher list for TLS 1.2 and below (nil: OpenSSL's default).
    ///   - alpn: the application protocols a client offers (none: no ALPN extension), or those a
    ///     server speaks, in its order of preference: it answers the first the client offers (none:
    ///     it ignores ALPN, as a server that knows none).
    init(
        _ role: Role, over stream: ScriptedStream, versions: ClosedRange<Int32> = TLS1_2_VERSION...TLS1_3_VERSION,
        ciphers: String? = nil, alpn: [String] = []
    ) throws {
        serverProtocols = ServerProtocols(alpn.map { Array($0.utf8) })
        self.stream = stream
        // What the session sent before the peer began (a CONNECT's 200) is not TLS.
        fed = stream.delivered.count
        let isClient: Bool
        if case .client = role { isClient = true } else { isClient = false }
        context = try Self.check(SSL_CTX_new(isClient ? TLS_client_method() : TLS_server_method()), "SSL_CTX_new")
        CProxyShims_SSL_CTX_set_min_proto_version(context, versions.lowerBound)
        CProxyShims_SSL_CTX_set_max_proto_version(context, versions.upperBound)
        if versions.lowerBound < TLS1_2_VERSION {
            // OpenSSL 3 refuses TLS 1.0 and 1.1 at its default security level.
            SSL_CTX_set_security_level(context, 0)
        }
        if let ciphers { _ = SSL_CTX_set_cipher_list(context, ciphers) }
        switch role {
        case .client(_, let trusting?):
            guard SSL_CTX_load_verify_locations(context, trusting, nil) == 1 else {
                throw Failure("loading \(trusting)")
            }
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        case .client:
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        case .server(let certificate, let key):
            guard SSL_CTX_use_certificate_chain_file(context, certificate) == 1,
                SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) == 1
            else { throw Failure("loading \(certificate)") }
            if !alpn.isEmpty {
                SSL_CTX_set_alpn_select_cb(
                    context, Self.selectProtocol, Unmanaged.passUnretained(serverProtocols).toOpaque())
            }
        }
        ssl = try Self.check(SSL_new(context), "SSL_new")
        incoming = try Self.check(BIO_new(BIO_s_mem()), "BIO_new")
        outgoing = try Self.check(BIO_new(BIO_s_mem()), "BIO_new")
        // An empty input is "no bytes yet", not an end, until the session's end is fed.
        BIO_ctrl(incoming, BIO_C_SET_BUF_MEM_EOF_RETURN, -1, nil)
        SSL_set_bio(ssl, incoming, outgoing)
        if case .client(let serverName, let trusting) = role {
            SSL_set_connect_state(ssl)
            if let serverName {
                CProxyShims_SSL_set_tlsext_host_name(ssl, serverName)
                if trusting != nil { SSL_set1_host(ssl, serverName) }
            }
            if !alpn.isEmpty {
                let wire = alpn.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
                SSL_set_alpn_protos(ssl, wire, UInt32(wire.count))
            }
        } else {
            SSL_set_accept_state(ssl)
        }
    }

    /// A server's protocols, for its ALPN callback (the peer keeps it as long as its context).
    final class ServerProtocols {
        let names: [[UInt8]]
        init(_ names: [[UInt8]]) { self.names = names }
    }

    private let serverProtocols: ServerProtocols

    /// The first of the server's protocols that the client offers; none (no ALPN) otherwise.
    private static let selectProtocol:
        @convention(c) (
            OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
            UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
        ) -> Int32 = { _, out, outLength, offered, offeredLength, argument in
            guard let out, let outLength, let offered, let argument else { return SSL_TLSEXT_ERR_NOACK }
            let protocols = Unmanaged<ServerProtocols>.fromOpaque(argument).takeUnretainedValue()
            let list = UnsafeBufferPointer(start: offered, count: Int(offeredLength))
            for name in protocols.names {
                var index = 0
                while index < list.count {
                    let length = Int(list[index])
                    let start = index + 1
                    if start + length <= list.count, Array(list[start..<start + length]) == name {
                        out.pointee = offered + start
                        outLength.pointee = UInt8(length)
                        return SSL_TLSEXT_ERR_OK
                    }
                    index = start + length
                }
            }
            return SSL_TLSEXT_ERR_NOACK
        }

    deinit {
        SSL_free(ssl)  // Frees both BIOs.
        SSL_CTX_free(context)
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    private static func check(_ pointer: OpaquePointer?, _ what: String) throws -> OpaquePointer {
        guard let pointer else { throw Failure(what) }
        return pointer
    }

    /// Moves what can move: the session's bytes into OpenSSL, the handshake or reading on, the
    /// peer's plaintext out, OpenSSL's records to the session. Returns whether anything moved.
    @discardableResult
    func exchange() -> Bool {
        guard !isSilent else { return false }
        var moved = false
        if stream.delivered.count > fed {
            let bytes = Array(stream.delivered[fed...])
            fed = stream.delivered.count
            _ = bytes.withUnsafeBytes { BIO_write(incoming, $0.baseAddress, Int32($0.count)) }
            moved = true
        }
        if stream.sentEnd, !endFed {
            endFed = true
            BIO_ctrl(incoming, BIO_C_SET_BUF_MEM_EOF_RETURN, 0, nil)
            moved = true
        }
        if handshake == .underWay {
            let result = SSL_do_handshake(ssl)
            if result == 1 {
                handshake = .complete
                moved = true
            } else {
                let code = SSL_get_error(ssl, result)
                if code != SSL_ERROR_WANT_READ && code != SSL_ERROR_WANT_WRITE {
                    handshake = .failed(Self.drainErrors(code))
                    moved = true
                }
            }
        }
        if handshake == .complete {
            if let application {
                moved = readPlaintext() || moved
                moved = application(self) || moved
            }
            if !pendingPlaintext.isEmpty {
                let written = pendingPlaintext.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
                if written > 0 {
                    pendingPlaintext.removeFirst(Int(written))
                    moved = true
                }
            }
            moved = readPlaintext() || moved
        }
        moved = flushRecords() || moved
        return moved
    }

    private func readPlaintext() -> Bool {
        var moved = false
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while !sawEnd {
            let count = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if count > 0 {
                received += buffer.prefix(Int(count))
                moved = true
                continue
            }
            let code = SSL_get_error(ssl, count)
            if code == SSL_ERROR_ZERO_RETURN || code == SSL_ERROR_SYSCALL || code == SSL_ERROR_SSL {
                sawEnd = true
                sawCloseNotify = code == SSL_ERROR_ZERO_RETURN
                moved = true
            }
            break
        }
        return moved
    }

    private func flushRecords() -> Bool {
        let pending = BIO_ctrl_pending(outgoing)
        guard pending > 0 else { return false }
        var bytes = [UInt8](repeating: 0, count: Int(pending))
        let count = bytes.withUnsafeMutableBytes { BIO_read(outgoing, $0.baseAddress, Int32($0.count)) }
        stream.peerSends(Array(bytes.prefix(Int(max(count, 0)))))
        return count > 0
    }

    private static func drainErrors(_ code: Int32) -> String {
        var reasons: [String] = []
        while case let error = ERR_get_error(), error != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(error, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return reasons.isEmpty ? "SSL_get_error \(code)" : reasons.joined(separator: "; ")
    }

    /// Sends `bytes` as application data once the handshake is complete (queued until then).
    func send(_ bytes: [UInt8]) { pendingPlaintext += bytes }
    func send(_ text: String) { send(Array(text.utf8)) }

    /// What speaks over the session's plaintext, when something does (an HTTP/2 session): called on
    /// each exchange once the handshake is complete, it takes ``received`` and sends; returns
    /// whether it moved anything.
    var application: ((MemoryTLSPeer) -> Bool)?

    /// Takes the plaintext received so far, as bytes.
    func takeBytes() -> [UInt8] {
        defer { received = [] }
        return received
    }

    /// Sends close_notify (the session reads it as the peer's clean end).
    func closeNotify() {
        SSL_shutdown(ssl)
        _ = flushRecords()
    }

    var receivedText: String { String(decoding: received, as: UTF8.self) }

    /// Takes what was received so far (later calls see only what comes after).
    func take() -> String {
        defer { received = [] }
        return receivedText
    }

    /// The name of the certificate's subject the server presented (a client's view).
    var peerSubject: String? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        var buffer = [CChar](repeating: 0, count: 512)
        X509_NAME_oneline(X509_get_subject_name(certificate), &buffer, Int32(buffer.count))
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The application protocol the handshake agreed on (ALPN), nil for none.
    var selectedProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// The protocol version spoken ("TLSv1.3").
    var version: String { String(cString: SSL_get_version(ssl)) }
}
