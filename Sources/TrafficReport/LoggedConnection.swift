import ATSPolicy
import LogRecord
import TextFormats

/// What `report` reads from one line of the proxy's JSON log (the contract of ProxyCore's
/// `ConnectionRecord`, its names LogRecord's ``ConnectionField``). Only `host`, `scheme` and `action` are required; every other field may be
/// null or absent, as it is for a connection that never reached its server.
package struct LoggedConnection: Sendable, Equatable {
    /// The log's one ``LogRecord/Action``.
    package typealias Action = LogRecord.Action

    /// What the proxy's probe saw of the server (`tls`): the ATS-shaped handshake's version and
    /// suite, or, when that failed, the permissive one's (the server's best version, its chosen suite).
    package struct ServerFacts: Sendable, Equatable {
        package var version: TLSVersion?
        /// The suite's name as logged (IANA), and the suite when the name is known.
        package var cipherName: String?
        package var cipher: CipherSuite?
        /// `tls.group`: the key-exchange group; nil when none was used or the line predates the field.
        package var group: KeyExchangeGroup?
    }

    /// The verdict for a ClientHello naming another host than the CONNECT (`sni_check`).
    package struct ServerNameCheck: Sendable, Equatable {
        package var host: String
        package var violations: [String]
        /// The explanations of these violations (the tail of the line's `explanations`).
        package var explanations: [String]
    }

    package var timestamp: String?
    /// `CONNECT`, `GET`, …; `-` for a request head that could not be parsed.
    package var method: String?
    package var host: String
    package var port: Int?
    package var scheme: URLScheme
    package var action: Action
    /// `rule.kind` as the daemon's policy decided it.
    package var ruleKind: String?
    /// The request host's violations and their explanations, in the same order.
    package var violations: [String]
    package var explanations: [String]
    /// `tunnel`: `cleartext` when the device spoke plain HTTP (or a `ws://` socket) through a CONNECT.
    package var tunnel: String?
    /// `capture`: how the connection reached the proxy (`proxy` for lines written before the field).
    package var capture = CapturePath.proxy
    /// `device`: the WireGuard peer the client was; nil for other clients and older lines.
    package var device: String?
    package var server: ServerFacts?
    package var serverNameCheck: ServerNameCheck?
    package var upstreamError: String?
    /// `failure`: why `upstream_error` is set, as a code; nil when it is not, when the line predates
    /// the field, or when the code is one this reader does not know.
    package var failure: Failure?
    /// `hello_unreadable`: why the tunnel's ClientHello could not be read (blocked in enforce mode,
    /// relayed unjudged in report mode). The device's own bytes, not the server, were at fault.
    package var helloUnreadable: String?
    /// `passthrough`: why intercept mode relayed the connection unread (`pinned`,
    /// `client_rejected_before`, …); nil when it was intercepted, or in tunnel mode.
    package var passthrough: String?
    /// `client`: the device's address and port.
    package var client: String?
    /// `app`: the app its User-Agent named; nil when none did, or the line predates the field.
    package var app: AppAgent?

    /// Whether the line is a load the app made: not a malformed head or a request that was not a
    /// proxy request at all (both logged with a placeholder host, and answered 400 by the proxy),
    /// and not one the proxy denied (a client or a destination it does not serve, which says
    /// nothing about what ATS needs).
    package var isLoad: Bool {
        guard method != "-", host != "-", action != .denied else { return false }
        if let failure { return failure != .notAProxyRequest }
        // Lines written before the `failure` field (report still reads last week's logs) say it
        // only in words.
        return !(upstreamError?.hasPrefix("not a proxy request") ?? false)
    }

    /// Whether the device sent cleartext to the host: an `http://` request, or plain bytes in a tunnel.
    package var isCleartext: Bool { scheme == .http || tunnel == "cleartext" }

    package init(json: JSONValue) throws(LogRecordError) {
        typealias Field = ConnectionField
        guard json.objectValue != nil else { throw LogRecordError("the line is not a JSON object") }
        host = try Self.requiredString(json, Field.host)
        let schemeName = try Self.requiredString(json, Field.scheme)
        guard let scheme = URLScheme(rawValue: schemeName) else {
            throw LogRecordError("\"scheme\" is \"\(schemeName)\", not https or http")
        }
        self.scheme = scheme
        let actionName = try Self.requiredString(json, Field.action)
        guard let action = Action(rawValue: actionName) else {
            throw LogRecordError("\"action\" is \"\(actionName)\", not allowed, blocked, failed or denied")
        }
        self.action = action
        timestamp = json[Field.ts]?.stringValue
        method = json[Field.method]?.stringValue
        upstreamError = json[Field.upstreamError]?.stringValue
        failure = json[Field.failure]?.stringValue.flatMap(Failure.init(rawValue:))
        port = json[Field.port]?.intValue.map(Int.init)
        ruleKind = json[Field.rule]?[RuleField.kind]?.stringValue
        tunnel = json[Field.tunnel]?.stringValue
        capture = json[Field.capture]?.stringValue.flatMap(CapturePath.init(rawValue:)) ?? .proxy
        device = json[Field.device]?.stringValue
        helloUnreadable = json[Field.helloUnreadable]?.stringValue
        passthrough = json[Field.passthrough]?.stringValue
        client = json[Field.client]?.stringValue
        app = AppAgent(json: json[Field.app])
        let allViolations = try Self.strings(json, Field.violations)
        let allExplanations = try Self.strings(json, Field.explanations)
        if let check = json[Field.sniCheck], !check.isNull {
            let checkHost = try Self.requiredString(check, ServerNameCheckField.host, within: Field.sniCheck)
            let checkViolations = try Self.strings(check, ServerNameCheckField.violations, within: Field.sniCheck)
            // The line's lists hold the request host's violations, then the SNI's (ConnectionRecord.json).
            let tail = min(checkViolations.count, allExplanations.count)
            serverNameCheck = ServerNameCheck(
                host: checkHost, violations: checkViolations, explanations: Array(allExplanations.suffix(tail)))
            violations = Array(allViolations.dropLast(min(checkViolations.count, allViolations.count)))
            explanations = Array(allExplanations.dropLast(tail))
        } else {
            violations = allViolations
            explanations = allExplanations
        }
        if let tls = json[Field.tls], !tls.isNull {
            let versionName = tls[ProbeTLSField.version]?.stringValue
            let cipherName = tls[ProbeTLSField.cipher]?.stringValue
            // By its number: the name is for people, and one this reader does not know is still a group.
            let codepoint = tls[ProbeTLSField.group]?[KeyExchangeGroupField.codepoint]?.intValue
            server = ServerFacts(
                version: versionName.flatMap(TLSVersion.init(name:)), cipherName: cipherName,
                cipher: cipherName.flatMap(CipherSuite.init(name:)),
                group: codepoint.flatMap { UInt16(exactly: $0) }.map(KeyExchangeGroup.init(codepoint:)))
        }
    }

    private static func requiredString(
        _ object: JSONValue, _ field: some LogField, within: ConnectionField? = nil
    ) throws(LogRecordError) -> String {
        let name = within.map { "\($0.rawValue).\(field.rawValue)" } ?? field.rawValue
        guard let value = object[field] else { throw LogRecordError("no \"\(name)\" field") }
        guard let text = value.stringValue, !text.isEmpty else {
            throw LogRecordError("\"\(name)\" is not a non-empty string")
        }
        return text
    }

    /// An array of strings, or empty when the field is null or absent.
    private static func strings(
        _ object: JSONValue, _ field: some LogField, within: ConnectionField? = nil
    ) throws(LogRecordError) -> [String] {
        guard let value = object[field], !value.isNull else { return [] }
        let name = within.map { "\($0.rawValue).\(field.rawValue)" } ?? field.rawValue
        guard let items = value.arrayValue else { throw LogRecordError("\"\(name)\" is not an array") }
        var texts: [String] = []
        for item in items {
            guard let text = item.stringValue else {
                throw LogRecordError("\"\(name)\" holds a value that is not a string")
            }
            texts.append(text)
        }
        return texts
    }
}

/// A line that is JSON but not a connection (or request) record `report` and `har` can use.
package struct LogRecordError: Error, Sendable, Equatable, CustomStringConvertible {
    package var reason: String
    /// What the line should have been: `connection record`, `request record`.
    package var record: String

    package init(_ reason: String, record: String = "connection record") {
        self.reason = reason
        self.record = record
    }

    package var description: String { "not a \(record): \(reason)" }
}
