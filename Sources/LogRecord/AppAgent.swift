import TextFormats

/// Which app made a load, as its `User-Agent` says: what a connection or request line logs as `app`.
///
/// URLSession's default User-Agent names the app: `MyApp/1.4.2 CFNetwork/1568.100.1 Darwin/24.0.0`,
/// the bundle's name (percent-encoded where it has spaces) and `CFBundleVersion`, then the versions of
/// CFNetwork and of the Darwin kernel. Alamofire's default, which many apps send instead, names the
/// app and the iOS version in a comment: `MyApp/1.4.2 (com.example.myapp; build:42; iOS 17.4.0)
/// Alamofire/5.8.0`. Both are an ``app``. Browsers (`Mozilla/5.0 …`, Safari and every WebView),
/// and every other agent (curl, OkHttp, Dart, an SDK's own name) are ``other``, with the raw string.
package enum AppAgent: Sendable, Hashable {
    case app(AppRelease)
    case other(userAgent: String)

    /// The longest User-Agent kept, in characters: enough for any real one, and a bound on the line.
    package static let maximumLength = 512

    /// What a filter names it by: the app's name, or `other`.
    package var label: String {
        switch self {
        case .app(let release): release.name
        case .other: Self.otherLabel
        }
    }

    /// The label of every agent that is not an app (`--app other`).
    package static let otherLabel = "other"

    /// The User-Agent as sent (cut at ``maximumLength``).
    package var userAgent: String {
        switch self {
        case .app(let release): release.userAgent
        case .other(let userAgent): userAgent
        }
    }

    /// Parses a `User-Agent` value; nil for an empty one.
    package init?(userAgent raw: String) {
        let userAgent = String(raw.trimmingSpaces.prefix(Self.maximumLength))
        guard !userAgent.isEmpty else { return nil }
        self = Self.urlSession(userAgent) ?? Self.commentNamingIOS(userAgent) ?? .other(userAgent: userAgent)
    }

    /// `Name/Version CFNetwork/x Darwin/y`: the name is everything before ` CFNetwork/`, so names
    /// with spaces (`Kilter Board/202 CFNetwork/…`) are whole.
    private static func urlSession(_ userAgent: String) -> AppAgent? {
        guard !userAgent.hasPrefix("Mozilla/"), let marker = userAgent.firstRange(of: " CFNetwork/") else { return nil }
        let (name, version) = product(userAgent[..<marker.lowerBound])
        guard !name.isEmpty else { return nil }
        let cfNetwork = token(userAgent[marker.upperBound...])
        let darwin = userAgent.firstRange(of: " Darwin/").map { token(userAgent[$0.upperBound...]) }
        return .app(
            AppRelease(
                name: name, version: version, cfNetwork: cfNetwork.isEmpty ? nil : cfNetwork,
                darwin: darwin.flatMap { $0.isEmpty ? nil : $0 },
                iOS: darwin.flatMap(DarwinReleases.iOSVersion(darwin:)), userAgent: userAgent))
    }

    /// `Name/Version (…; iOS 17.4.0; …) …`, Alamofire's and AFNetworking's shape: an app, with the
    /// iOS version it states.
    private static func commentNamingIOS(_ userAgent: String) -> AppAgent? {
        guard !userAgent.hasPrefix("Mozilla/"), let open = userAgent.firstRange(of: " ("),
            let close = userAgent[open.upperBound...].firstIndex(of: ")")
        else { return nil }
        let parts = userAgent[open.upperBound..<close].split(separator: ";").map { $0.trimmingSpaces }
        guard let stated = parts.first(where: { $0.hasPrefix("iOS ") }) else { return nil }
        let productText = userAgent[..<open.lowerBound]
        guard productText.contains("/") else { return nil }
        let (name, version) = product(productText)
        guard !name.isEmpty else { return nil }
        let iOS = stated.dropFirst(4).trimmingSpaces
        return .app(
            AppRelease(
                name: name, version: version, cfNetwork: nil, darwin: nil, iOS: iOS.isEmpty ? nil : iOS,
                userAgent: userAgent))
    }

    /// `My%20App/1.4.2` → (`My App`, `1.4.2`): split at the last `/`, the name percent-decoded.
    private static func product(_ text: Substring) -> (name: String, version: String?) {
        guard let slash = text.lastIndex(of: "/") else { return (percentDecoded(text.trimmingSpaces), nil) }
        let version = text[text.index(after: slash)...].trimmingSpaces
        return (percentDecoded(text[..<slash].trimmingSpaces), version.isEmpty ? nil : version)
    }

    /// The text up to the next space (or the end).
    private static func token(_ text: Substring) -> String {
        String(text.prefix { $0 != " " })
    }

    /// URLSession percent-encodes the bundle name (`My%20App`); a malformed escape is kept as sent.
    private static func percentDecoded(_ text: String) -> String {
        guard text.contains("%") else { return text }
        var bytes: [UInt8] = []
        var utf8 = text.utf8[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
                let high = HexDigit.value(utf8[utf8.startIndex]),
                let low = HexDigit.value(utf8[utf8.index(after: utf8.startIndex)])
            {
                bytes.append(high << 4 | low)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self) ?? text
    }
}

/// An app's release, as its User-Agent names it.
package struct AppRelease: Sendable, Hashable {
    /// The bundle's name (URLSession's percent-encoding undone).
    package var name: String
    /// URLSession sends `CFBundleVersion`, the build number, not the marketing version.
    package var version: String?
    package var cfNetwork: String?
    package var darwin: String?
    /// The iOS version the Darwin version implies (``DarwinReleases``), or the one the agent states.
    package var iOS: String?
    package var userAgent: String

    package init(
        name: String, version: String?, cfNetwork: String?, darwin: String?, iOS: String?, userAgent: String
    ) {
        self.name = name
        self.version = version
        self.cfNetwork = cfNetwork
        self.darwin = darwin
        self.iOS = iOS
        self.userAgent = userAgent
    }
}

/// The members of a line's `app` object: docs/log-format.md is the contract.
package enum AppField: String, LogField {
    /// `app` (URLSession's or Alamofire's shape) or `other`.
    case kind, name, version
    case cfNetwork = "cfnetwork"
    case darwin
    case iOS = "ios"
    case userAgent = "user_agent"
}

extension AppAgent: JSONObjectWritable {
    package func writeMembers(to sink: inout some JSONObjectSink) {
        let release: AppRelease? = if case .app(let release) = self { release } else { nil }
        sink.add(AppField.kind, string: release == nil ? Self.otherLabel : "app")
        sink.add(AppField.name, string: release?.name)
        sink.add(AppField.version, string: release?.version)
        sink.add(AppField.cfNetwork, string: release?.cfNetwork)
        sink.add(AppField.darwin, string: release?.darwin)
        sink.add(AppField.iOS, string: release?.iOS)
        sink.add(AppField.userAgent, string: userAgent)
    }

    /// The `app` object as a value.
    package var json: JSONValue {
        var builder = JSONObjectBuilder()
        writeMembers(to: &builder)
        return builder.value
    }

    /// The `app` object as logged; nil for null, an absent field (lines written before it), or an
    /// object that is not one.
    package init?(json: JSONValue?) {
        guard let json, json.objectValue != nil, let userAgent = json[AppField.userAgent]?.stringValue else {
            return nil
        }
        guard json[AppField.kind]?.stringValue == "app", let name = json[AppField.name]?.stringValue else {
            self = .other(userAgent: userAgent)
            return
        }
        self = .app(
            AppRelease(
                name: name, version: json[AppField.version]?.stringValue,
                cfNetwork: json[AppField.cfNetwork]?.stringValue, darwin: json[AppField.darwin]?.stringValue,
                iOS: json[AppField.iOS]?.stringValue, userAgent: userAgent))
    }
}

/// The last User-Agent a connection's requests sent and the app it names: a connection's requests
/// nearly always send the same one, and parsing it for every request was a fifth of the proxy's CPU
/// per HTTP/2 stream (bench-h2). One per connection, on its loop.
package struct AppAgentMemo: Sendable {
    private var last: (userAgent: String, agent: AppAgent?)?

    package init() {}

    /// ``AppAgent/init(userAgent:)`` of `userAgent`, parsed only when it differs from the last one.
    package mutating func agent(userAgent: String?) -> AppAgent? {
        guard let userAgent else { return nil }
        // Byte for byte: `==` on String would take another byte form of the same text for it.
        if let last, last.userAgent.utf8.elementsEqual(userAgent.utf8) { return last.agent }
        let agent = AppAgent(userAgent: userAgent)
        last = (userAgent, agent)
        return agent
    }
}

extension StringProtocol {
    /// Without the spaces and tabs at either end. Found on the UTF-8 view: both are one byte, and
    /// going by `Character` (grapheme breaking both ways) made this the parser's slowest part.
    fileprivate var trimmingSpaces: String {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = utf8.firstIndex(where: { !isSpace($0) }) else { return "" }
        var end = first
        var index = first
        while index != utf8.endIndex {
            let byte = utf8[index]
            index = utf8.index(after: index)
            if !isSpace(byte) { end = index }
        }
        return String(self[first..<end])
    }
}
