import TextFormats

import ATSPolicy

/// What the proxy did with one connection or request: one JSON line in the log.
///
/// The field names are the log contract (issue 3): fields may be added, never renamed.
package struct ConnectionRecord: Sendable {
    /// `blocked`: ATS would refuse the connection. `denied`: the proxy refuses the client or the
    /// destination whatever ATS says (`--allow-client`, `--allow-destination`, a loop), and the line
    /// says nothing about the app's ATS needs.
    package enum Action: String, Sendable {
        case allowed, blocked, failed, denied
    }

    package enum TunnelProtocol: String, Sendable {
        case tls, cleartext
    }

    /// When the connection was accepted, in milliseconds since 1970 (UTC).
    package var startedAt: Int64
    /// The client's address and port, `127.0.0.1:50312`.
    package var client: String
    /// `CONNECT`, `GET`, …
    package var method: String
    package var scheme: URLScheme
    package var host: String
    package var port: UInt16
    /// The server name the device's ClientHello carried, when there was one.
    package var serverNameIndication: String?
    /// The policy's answer for the host, known before any verdict: logged as `rule` even when the
    /// upstream could not be reached.
    package var requirements: Requirements?
    /// The verdict for the request's host (CONNECT) or URL.
    package var verdict: Verdict?
    /// The verdict for the ClientHello's server name, when it named another host than the CONNECT.
    package var serverNameVerdict: Verdict?
    /// What the device sent through a CONNECT tunnel: TLS, or cleartext (judged by the `cleartext` rule).
    package var tunnelProtocol: TunnelProtocol?
    /// Why the tunnel's first bytes, which looked like TLS, held no ClientHello the proxy could read
    /// (an empty or oversized record, a malformed or incomplete hello, an SNI that is not a host
    /// name). Nothing could be judged, so the connection is not compliant whatever its verdicts say.
    package var helloUnreadable: String?
    package var action: Action
    /// What the ATS-shaped (or, after it failed, the permissive) probe saw, as the log's `tls` value
    /// (built once per probe rather than once per connection); set with ``noteProbe(_:)``.
    private var probedObserved: ObservedConnection?
    /// The same, serialized once per probe (``ProbeResult/tlsLogBytes``): the biggest part of a log
    /// line, and the same for every connection that reuses the probe.
    private var probedBytes: [UInt8] = ConnectionRecord.nullBytes
    /// The version and suite the device itself negotiated, read from the tunnel's hellos.
    package var deviceVersion: TLSVersion?
    package var deviceCipher: CipherSuite?
    /// The origin's status code, for a forwarded plain-HTTP request.
    package var status: Int?
    /// The address the connection reached (or the probe judged), `203.0.113.7:443`.
    package var upstreamAddress: String?
    /// Why the upstream could not be reached, when it could not.
    package var upstreamError: String?
    package var bytesUp: Int64 = 0
    package var bytesDown: Int64 = 0
    package var durationMilliseconds: Int64 = 0
    /// The client connection's number in this daemon run, shared by its request lines.
    package var connectionID: UInt64 = 0
    /// Intercept mode only: whether the TLS was terminated, or relayed as a tunnel.
    package var inspect: InspectOutcome?
    /// Why intercept mode relayed the connection as a tunnel.
    package var passthrough: PassthroughReason?
    /// Why intercepting failed on the device's side (it aborted the minted handshake).
    package var interceptFailed: String?
    /// The alert the device sent when it aborted the minted handshake.
    package var clientAlert: String?
    /// How many request lines an intercepted connection produced.
    package var requests: Int?
    /// Intercept mode: whether the proxy's upstream handshake resumed a session of an earlier
    /// connection (its `tls` facts are then those of the full handshake that made the session).
    package var upstreamResumed: Bool?

    /// What intercept mode did with a connection.
    package enum InspectOutcome: String, Sendable {
        case intercept, passthrough
    }

    package init(
        startedAt: Int64, client: String, method: String, scheme: URLScheme, host: String, port: UInt16,
        action: Action
    ) {
        self.startedAt = startedAt
        self.client = client
        self.method = method
        self.scheme = scheme
        self.host = host
        self.port = port
        self.action = action
    }

    /// Records what the probe behind this connection's verdict saw.
    package mutating func noteProbe(_ result: ProbeResult) {
        probedObserved = result.observed
        probedBytes = result.tlsLogBytes
    }

    /// The verdicts that were reached, the request's host first.
    private var verdicts: [Verdict] { [verdict, serverNameVerdict].compactMap(\.self) }

    /// The log line as a value (what ``logLine`` holds).
    package var json: JSONValue {
        var builder = JSONObjectBuilder()
        write(to: &builder)
        return builder.value
    }

    /// The log line (without its newline) as bytes, what is written: the same as
    /// `json.serializedBytes`, written without building the value, with the probe's `tls` value
    /// copied in already serialized rather than written again for every connection.
    package var logLine: [UInt8] {
        var writer = JSONObjectWriter(reservingCapacity: 512 + probedBytes.count)
        write(to: &writer)
        return writer.finish()
    }

    /// The line's fields as they stand while the connection is still open, as kind
    /// `connection_open`: never logged, only fed to the live view, so a long-lived tunnel shows
    /// from its verdict on instead of from its end.
    package var openLine: [UInt8] {
        var writer = JSONObjectWriter(reservingCapacity: 512 + probedBytes.count)
        write(to: &writer, kind: "connection_open")
        return writer.finish()
    }

    private static let nullBytes = Array("null".utf8)

    /// The log contract's fields, in order.
    private func write(to sink: inout some JSONObjectSink, kind: String = "connection") {
        let verdicts = self.verdicts
        // The verdict that decides what is logged as `rule` and `error`: the first non-compliant one.
        let deciding = verdicts.first { !$0.isCompliant } ?? verdict
        let violations = verdicts.flatMap(\.violations)
        sink.add("ts", string: DateFormat.rfc3339(milliseconds: startedAt))
        sink.add("client", string: client)
        sink.add("method", string: method)
        sink.add("scheme", string: scheme.rawValue)
        sink.add("host", string: host)
        sink.add("port", int: Int64(port))
        sink.add("sni", string: serverNameIndication)
        sink.add("rule", object: (deciding?.requirements ?? requirements)?.rule)
        sink.add("compliant", bool: helloUnreadable == nil && !verdicts.isEmpty && verdicts.allSatisfy(\.isCompliant))
        sink.add("action", string: action.rawValue)
        sink.add("violations", strings: violations.map(\.kind.name))
        sink.add("error", object: deciding?.error)
        sink.add("explanations", strings: violations.map(\.explanation))
        sink.add("sni_check", serverNameVerdict.map(ConnectionRecord.serverNameJSON))
        sink.add("tunnel", string: tunnelProtocol?.rawValue)
        sink.add("hello_unreadable", string: helloUnreadable)
        sink.add("tls", value: probedObserved.map(ConnectionRecord.tlsJSON) ?? .null, serializedAs: probedBytes)
        sink.add("observed", object: deviceVersion != nil || deviceCipher != nil ? DeviceHello(version: deviceVersion, cipher: deviceCipher) : nil)
        sink.add("status", status.map { .int($0) })
        sink.add("upstream", string: upstreamAddress)
        sink.add("upstream_error", string: upstreamError)
        sink.add("bytes_up", int: bytesUp)
        sink.add("bytes_down", int: bytesDown)
        sink.add("duration_ms", int: durationMilliseconds)
        sink.add("kind", string: kind)
        sink.add("connection_id", int: Int64(connectionID))
        sink.add("inspect", string: inspect?.rawValue)
        sink.add("passthrough", string: passthrough?.rawValue)
        sink.add("intercept_failed", string: interceptFailed)
        sink.add("client_alert", string: clientAlert)
        sink.add("requests", requests.map { .int(Int64($0)) })
        sink.add("upstream_resumed", upstreamResumed.map { .bool($0) })
    }

    /// The version and suite the device negotiated, as the log's `observed` object.
    private struct DeviceHello: JSONObjectWritable {
        let version: TLSVersion?
        let cipher: CipherSuite?

        func writeMembers(to sink: inout some JSONObjectSink) {
            sink.add("version", string: version?.plistName)
            sink.add("cipher", string: cipher?.ianaName)
        }
    }

    static func serverNameJSON(_ verdict: Verdict) -> JSONValue {
        .object([
            ("host", .string(verdict.requirements.host.description)),
            ("rule", verdict.requirements.rule.json),
            ("compliant", .bool(verdict.isCompliant)),
            ("violations", .strings(verdict.violations.map(\.kind.name))),
        ])
    }

    static func tlsJSON(_ observed: ObservedConnection) -> JSONValue {
        .object([
            ("version", .optional(observed.tlsVersion?.plistName)),
            ("cipher", .optional(observed.cipherSuite?.ianaName)),
            ("trust", .string(observed.trust.name)),
            ("certificates", .array(observed.chain.map { .object($0.summaryFields) })),
        ])
    }
}
