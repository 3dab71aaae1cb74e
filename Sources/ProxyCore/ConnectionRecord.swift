import ATSPolicy
import LogRecord
import TextFormats

/// What the proxy did with one connection or request: one JSON line in the log.
///
/// The field names are the log contract (issue 3), defined once in LogRecord's ``ConnectionField``:
/// fields may be added, never renamed.
package struct ConnectionRecord: Sendable {
    /// The log's one ``LogRecord/Action``.
    package typealias Action = LogRecord.Action

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
    /// Why the connection failed or was closed, in words (`upstream_error`); set with ``fail(_:)``.
    package private(set) var upstreamError: String?
    /// The same as a code (`failure`): set together with ``upstreamError``, never apart.
    package private(set) var failure: Failure?
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
    /// Where the time went before bytes flowed (`timing`).
    package var timing = ConnectionTiming()
    /// The app the request head's User-Agent names (a CONNECT's or a plain request's); for an
    /// intercepted connection whose CONNECT named none, the first request's (``fold(_:)``).
    package var app: AppAgent?
    /// How the connection reached the proxy: through the proxy setting, or redirected to the
    /// transparent listener (then ``originalDestination`` is what the device dialled).
    package var capture = CapturePath.proxy
    /// A captured connection's destination as the device dialled it.
    package var originalDestination: String?
    /// A captured connection's server name resolves elsewhere than ``originalDestination``: to these.
    package var serverNameMismatch: String?
    /// The WireGuard peer whose tunnel address the client is (``DeviceNames``).
    package var device: String?
    /// The name the device's own DNS query resolved to the address it dialled (``ResolvedNames``).
    package var dnsName: String?

    /// What intercept mode did with a connection.
    package enum InspectOutcome: String, Sendable {
        case intercept, passthrough
    }

    package init(
        startedAt: Int64, client: String, method: String, scheme: URLScheme, host: String, port: UInt16,
        action: Action, app: AppAgent? = nil
    ) {
        self.app = app
        self.startedAt = startedAt
        self.client = client
        self.method = method
        self.scheme = scheme
        self.host = host
        self.port = port
        self.action = action
    }

    /// The key-exchange group of the probe behind this connection's verdict (`tls.group`), which its
    /// request lines repeat.
    package var probedKeyExchangeGroup: KeyExchangeGroup? { probedObserved?.keyExchangeGroup }

    /// Records what the probe behind this connection's verdict saw.
    package mutating func noteProbe(_ result: ProbeResult) {
        probedObserved = result.observed
        probedBytes = result.tlsLogBytes
    }

    /// Records why the connection failed or was closed: `upstream_error` and `failure`.
    package mutating func fail(_ reason: FailureReason) {
        upstreamError = reason.text
        failure = reason.failure
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
        write(to: &writer, kind: .connectionOpen)
        return writer.finish()
    }

    private static let nullBytes = Array("null".utf8)

    /// The log contract's fields, in order.
    private func write(to sink: inout some JSONObjectSink, kind: RecordKind = .connection) {
        typealias Field = ConnectionField
        let verdicts = self.verdicts
        // The verdict that decides what is logged as `rule` and `error`: the first non-compliant one.
        let deciding = verdicts.first { !$0.isCompliant } ?? verdict
        let violations = verdicts.flatMap(\.violations)
        sink.add(Field.ts, string: DateFormat.rfc3339(milliseconds: startedAt))
        sink.add(Field.client, string: client)
        sink.add(Field.method, string: method)
        sink.add(Field.scheme, string: scheme.rawValue)
        sink.add(Field.host, string: host)
        sink.add(Field.port, int: Int64(port))
        sink.add(Field.sni, string: serverNameIndication)
        sink.add(Field.rule, object: (deciding?.requirements ?? requirements)?.rule)
        sink.add(
            Field.compliant, bool: helloUnreadable == nil && !verdicts.isEmpty && verdicts.allSatisfy(\.isCompliant))
        sink.add(Field.action, string: action.rawValue)
        sink.add(Field.violations, strings: violations.map(\.kind.name))
        sink.add(Field.error, object: deciding?.error)
        sink.add(Field.explanations, strings: violations.map(\.explanation))
        sink.add(Field.sniCheck, serverNameVerdict.map(ConnectionRecord.serverNameJSON))
        sink.add(Field.tunnel, string: tunnelProtocol?.rawValue)
        sink.add(Field.helloUnreadable, string: helloUnreadable)
        sink.add(Field.tls, value: probedObserved.map(ConnectionRecord.tlsJSON) ?? .null, serializedAs: probedBytes)
        sink.add(
            Field.observed,
            object: deviceVersion != nil || deviceCipher != nil
                ? DeviceHello(version: deviceVersion, cipher: deviceCipher) : nil)
        sink.add(Field.status, status.map { .int($0) })
        sink.add(Field.upstream, string: upstreamAddress)
        sink.add(Field.upstreamError, string: upstreamError)
        sink.add(Field.bytesUp, int: bytesUp)
        sink.add(Field.bytesDown, int: bytesDown)
        sink.add(Field.durationMilliseconds, int: durationMilliseconds)
        sink.add(Field.kind, string: kind.rawValue)
        sink.add(Field.connectionID, int: Int64(connectionID))
        sink.add(Field.inspect, string: inspect?.rawValue)
        sink.add(Field.passthrough, string: passthrough?.rawValue)
        sink.add(Field.interceptFailed, string: interceptFailed)
        sink.add(Field.clientAlert, string: clientAlert)
        sink.add(Field.requests, requests.map { .int(Int64($0)) })
        sink.add(Field.upstreamResumed, upstreamResumed.map { .bool($0) })
        sink.add(Field.failure, string: failure?.rawValue)
        sink.add(Field.timing, timing.isEmpty ? .null : timing.json)
        sink.add(Field.app, object: app)
        sink.add(Field.capture, string: capture.rawValue)
        sink.add(Field.originalDestination, string: originalDestination)
        sink.add(Field.serverNameMismatch, string: serverNameMismatch)
        sink.add(Field.device, string: device)
        sink.add(Field.dnsName, string: dnsName)
    }

    /// The version and suite the device negotiated, as the log's `observed` object.
    private struct DeviceHello: JSONObjectWritable {
        let version: TLSVersion?
        let cipher: CipherSuite?

        func writeMembers(to sink: inout some JSONObjectSink) {
            sink.add(DeviceHelloField.version, string: version?.plistName)
            sink.add(DeviceHelloField.cipher, string: cipher?.ianaName)
        }
    }

    static func serverNameJSON(_ verdict: Verdict) -> JSONValue {
        .object([
            (ServerNameCheckField.host.rawValue, .string(verdict.requirements.host.description)),
            (ServerNameCheckField.rule.rawValue, verdict.requirements.rule.json),
            (ServerNameCheckField.compliant.rawValue, .bool(verdict.isCompliant)),
            (ServerNameCheckField.violations.rawValue, .strings(verdict.violations.map(\.kind.name))),
        ])
    }

    static func tlsJSON(_ observed: ObservedConnection) -> JSONValue {
        var fields: [(String, JSONValue)] = [
            (ProbeTLSField.version.rawValue, .optional(observed.tlsVersion?.plistName)),
            (ProbeTLSField.cipher.rawValue, .optional(observed.cipherSuite?.ianaName)),
            (ProbeTLSField.trust.rawValue, .string(observed.trust.name)),
            (ProbeTLSField.certificates.rawValue, .array(observed.chain.map { .object($0.summaryFields) })),
            (ProbeTLSField.group.rawValue, observed.keyExchangeGroup?.json ?? .null),
        ]
        // Only when something was fetched: most lines have nothing to say here.
        if !observed.intermediateFetches.isEmpty {
            fields.append(
                (ProbeTLSField.intermediateFetches.rawValue, .array(observed.intermediateFetches.map(\.json))))
        }
        return .object(fields)
    }
}

/// Where a connection's time went before bytes flowed, in milliseconds from its request head: the
/// log's `timing`. Each is nil when that step did not happen.
package struct ConnectionTiming: Sendable, Equatable {
    package var verdict: Int64?
    package var connect: Int64?
    package var established: Int64?

    package init() {}

    var isEmpty: Bool { verdict == nil && connect == nil && established == nil }

    var json: JSONValue {
        .object([
            (TimingField.verdictMilliseconds.rawValue, verdict.map { .int($0) } ?? .null),
            (TimingField.connectMilliseconds.rawValue, connect.map { .int($0) } ?? .null),
            (TimingField.establishedMilliseconds.rawValue, established.map { .int($0) } ?? .null),
        ])
    }
}
