import ATSPolicy
import TLSInspection

/// A WireGuard key: 32 bytes of Curve25519, written in base64 as `wg genkey` and `wg pubkey` write it.
package struct WireGuardKey: Sendable, Equatable {
    package let bytes: [UInt8]

    /// A new private key.
    package static func generate() throws(X25519.KeyError) -> WireGuardKey {
        WireGuardKey(bytes: try X25519.generatePrivateKey())
    }

    /// The key in `text` (base64 of 32 bytes); nil for anything else.
    package init?(base64 text: some StringProtocol) {
        guard let bytes = Base64.decode(String(text)), bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    /// This private key's public key.
    package func publicKey() throws(X25519.KeyError) -> WireGuardKey {
        WireGuardKey(bytes: try X25519.publicKey(of: bytes))
    }

    package var base64: String { Base64.encode(bytes) }
}
