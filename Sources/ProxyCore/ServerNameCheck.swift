import EventLoop
import TLSInspection

/// Whether a captured TLS connection's server name resolves to the address the device dialled, as
/// a dial of the proxy's would resolve it (`--hosts-file`, then the loop's resolver). A name that
/// resolves elsewhere, or not at all, is flagged on the line (`server_name_mismatch`), never
/// blocked: a device may hold an address from another resolver, a pinned IP or a CDN's answer.
///
/// The lookup runs beside the tunnel, so it adds nothing to the connection's time; a line due
/// before it answers waits for it (``LinesAwaitingChecks``), bounded by the resolver's own
/// timeouts, or until the loop ends (``abandon()``). Loop-confined.
final class ServerNameCheck {
    let name: String
    let original: SocketAddress
    /// nil while the lookup runs; then the mismatch in words, or `.some(nil)` when the name resolves there.
    private var outcome: String??
    private var waiting: ((String?) -> Void)?
    /// The lookup under way, for ``abandon()``.
    private var lookup: AddressLookup?

    /// Starts the check; `lookUp` resolves a name not in `hosts` (``SessionEnvironment/lookUpAddresses(_:port:completion:)``).
    init(
        name: String, original: SocketAddress, hosts: HostsTable?,
        lookUp: (String, UInt16, @escaping (Result<[SocketAddress], AddressLookupError>) -> Void) -> AddressLookup?
    ) {
        self.name = name
        self.original = original
        if let listed = hosts?.addresses(for: name) {
            outcome = .some(Self.mismatch(name, listed, original: original, source: "in --hosts-file"))
            return
        }
        // The completion holds this check until the resolver answers: a line handed to it then is
        // logged even after its session ended.
        let started = lookUp(name, original.port) { [self] result in
            switch result {
            case .success(let addresses):
                finish(Self.mismatch(name, addresses.compactMap(\.host), original: original, source: ""))
            case .failure(let error):
                finish("\(name) does not resolve (\(error.reason)); the device dialled \(original.host ?? "-")")
            }
        }
        if started == nil, outcome == nil { outcome = .some(nil) }  // No lookup: nothing to flag.
        if outcome == nil { lookup = started }
    }

    /// The loop ends before the answer: the lookup is cancelled and the check done, flagging nothing
    /// (nothing is known), so a line waiting for it is written now.
    func abandon() {
        guard outcome == nil else { return }
        lookup?.cancel()
        finish(nil)
    }

    /// Runs `body` with the mismatch (nil: none) once the lookup has answered: now, if it has.
    func whenDone(_ body: @escaping (String?) -> Void) {
        if let outcome { return body(outcome) }
        waiting = body
    }

    private func finish(_ mismatch: String?) {
        guard outcome == nil else { return }
        lookup = nil
        outcome = .some(mismatch)
        waiting?(mismatch)
        waiting = nil
    }

    /// nil when `addresses` hold the address dialled; else what the name resolves to instead.
    static func mismatch(_ name: String, _ addresses: [String], original: SocketAddress, source: String) -> String? {
        guard let dialled = original.host, !addresses.contains(dialled) else { return nil }
        let listed = addresses.isEmpty ? "no address" : addresses.joined(separator: ", ")
        return "\(name) resolves to \(listed)\(source.isEmpty ? "" : " " + source), not to \(dialled), "
            + "the address the device dialled"
    }
}
