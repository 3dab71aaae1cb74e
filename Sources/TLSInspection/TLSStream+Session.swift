import ATSPolicy
internal import COpenSSL

/// What both ends can tell about a session, whichever role they play. (A client's full view of
/// the server, chain and trust included, is ``TLSStream/outcome(now:)``.)
extension TLSStream {
    /// The version agreed on; nil until the handshake is complete.
    package var negotiatedVersion: TLSVersion? {
        guard isHandshakeComplete else { return nil }
        return TLSVersion(wireValue: UInt16(truncatingIfNeeded: SSL_version(ssl)))
    }

    /// The suite agreed on; nil until the handshake is complete.
    package var negotiatedCipher: CipherSuite? {
        guard isHandshakeComplete, let cipher = SSL_get_current_cipher(ssl) else { return nil }
        return CipherSuite(id: UInt16(truncatingIfNeeded: SSL_CIPHER_get_protocol_id(cipher)))
    }

    /// The SNI name: the one a client sends, or, on a server, the one its client sent (known once
    /// the ClientHello is read; nil when it sent none).
    package var serverName: String? {
        SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name).map { String(cString: $0) }
    }
}

/// Application protocols (ALPN), both ends.
extension TLSStream {
    /// Offers `protocols` (e.g. `["http/1.1"]`) in the ClientHello: a client stream, before its
    /// first ``handshake()``.
    package func offerApplicationProtocols(_ protocols: [String]) throws(TLSError) {
        let wire = ApplicationProtocols.wireList(protocols)
        // SSL_set_alpn_protos returns 0 on success, unlike most of OpenSSL.
        let result = wire.withUnsafeBufferPointer { SSL_set_alpn_protos(ssl, $0.baseAddress, UInt32($0.count)) }
        guard result == 0 else { throw TLSError.drainingQueue("offering application protocols \(protocols)") }
    }

    /// What a server stream answers the client's ALPN offer, before its first ``handshake()``: the
    /// protocol named, when the client offered it, and no ALPN at all otherwise (nil included), as a
    /// server that does not speak what the client offers. An intercepting proxy answers what the
    /// origin chose, so the device speaks what the origin speaks. Without a call, a server stream
    /// answers `http/1.1` when offered.
    package func answerApplicationProtocol(_ name: String?) {
        let answer = ApplicationProtocolAnswer(name.map { Array($0.utf8) })
        applicationProtocolAnswer = answer
        _ = SSL_set_ex_data(ssl, ApplicationProtocolAnswer.index, Unmanaged.passUnretained(answer).toOpaque())
    }

    /// The protocol the handshake agreed on; nil when none was (or before the handshake completes).
    package var selectedApplicationProtocol: String? { Self.selectedApplicationProtocol(of: ssl) }

    static func selectedApplicationProtocol(of ssl: OpaquePointer) -> String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }
}

/// The protocol a server stream answers with (``TLSStream/answerApplicationProtocol(_:)``), read by
/// the contexts' ALPN callback through the SSL's ex_data.
final class ApplicationProtocolAnswer {
    /// The protocol's name as ALPN carries it; nil: no ALPN.
    let name: [UInt8]?

    init(_ name: [UInt8]?) { self.name = name }

    /// The SSL ex_data slot that holds a stream's answer (unretained: the stream keeps it).
    static let index: Int32 = CRYPTO_get_ex_new_index(CRYPTO_EX_INDEX_SSL, 0, nil, nil, nil, nil)
}

/// ALPN's wire form: each name preceded by its length (RFC 7301 §3.1).
enum ApplicationProtocols {
    static func wireList(_ protocols: [String]) -> [UInt8] {
        protocols.flatMap { name -> [UInt8] in
            let bytes = Array(name.utf8.prefix(255))
            return [UInt8(bytes.count)] + bytes
        }
    }

    /// Where `wanted` starts in a wire list (after its length byte), if the list holds it.
    static func find(_ wanted: [UInt8], in list: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = 0
        while index < list.count {
            let length = Int(list[index])
            let start = index + 1
            guard start + length <= list.count else { return nil }
            if length == wanted.count, list[start..<start + length].elementsEqual(wanted) { return start }
            index = start + length
        }
        return nil
    }
}
