import Foundation
import Onboarding
import ProxyWire
import Testing

/// Requests, sites and checks the onboarding tests share.
enum Fixture {
    static let listener = "192.168.1.20:8080"
    static let client = "192.168.1.31"

    static let arrivals: [LocalRequest.Arrival] = [
        .proxied(secure: false), .proxied(secure: true), .direct(secure: false), .direct(secure: true),
    ]

    /// Small stand-ins for the CA's forms, for tests about the pages rather than the bytes.
    static let downloads = OnboardingConfiguration.CADownloads(
        pem: Array("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".utf8),
        der: [0x30, 0x82, 0x01, 0x00],
        mobileconfig: Array("<?xml version=\"1.0\"?><plist/>".utf8), sha256Fingerprint: "AB:CD:EF",
        subject: "CN=atsproxy test CA", notAfter: 2_110_000_000)

    static func configuration(
        addresses: [String] = [listener], authority: OnboardingConfiguration.CADownloads? = downloads,
        pacHosts: [PACHostPattern] = [], mode: OnboardingConfiguration.InspectMode = .intercept,
        liveViewURL: String? = nil, wireguard: OnboardingConfiguration.WireGuardOffer? = nil
    ) -> OnboardingConfiguration {
        OnboardingConfiguration(
            addresses: addresses, authority: authority, pacHosts: pacHosts, inspectMode: mode, liveViewURL: liveViewURL,
            wireguard: wireguard)
    }

    static func request(
        _ target: String, method: String = "GET", arrival: LocalRequest.Arrival = .proxied(secure: false),
        client: String = client, listener: String = listener
    ) -> LocalRequest {
        LocalRequest(method: method, pathAndQuery: target, client: client, arrival: arrival, listener: listener)
    }

    /// The site's whole response (the onboarding site never streams).
    static func response(
        _ site: OnboardingSite, _ request: LocalRequest, sourceLocation: SourceLocation = #_sourceLocation
    ) -> LocalResponse {
        guard case .response(let response) = site.reply(to: request) else {
            Issue.record("an event stream, not a response", sourceLocation: sourceLocation)
            return LocalResponse()
        }
        return response
    }

    static func body(_ response: LocalResponse) -> String { String(decoding: response.body, as: UTF8.self) }
}

/// A rough HTML5 well-formedness check: every non-void element closed in order, nothing left open.
/// Returns the problems found (empty when none).
func htmlNestingProblems(_ html: String) -> [String] {
    let void: Set<String> = [
        "meta", "br", "img", "input", "link", "hr", "wbr", "source", "col", "area", "base", "embed",
    ]
    var open: [String] = []
    var problems: [String] = []
    var rest = Substring(html)
    while let start = rest.firstIndex(of: "<") {
        guard let end = rest[start...].firstIndex(of: ">") else {
            problems.append("unterminated tag")
            break
        }
        let tag = rest[rest.index(after: start)..<end]
        rest = rest[rest.index(after: end)...]
        if tag.hasPrefix("!") { continue }
        let closing = tag.hasPrefix("/")
        let name = (closing ? tag.dropFirst() : tag).prefix { $0.isLetter || $0.isNumber }.lowercased()
        if closing {
            if open.last == name {
                open.removeLast()
            } else {
                problems.append("</\(name)> closes <\(open.last ?? "nothing")>")
            }
        } else if !void.contains(name), !tag.hasSuffix("/") {
            open.append(name)
        }
    }
    if !open.isEmpty { problems.append("left open: \(open)") }
    return problems
}
