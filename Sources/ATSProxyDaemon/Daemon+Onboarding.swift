import ATSPolicy
import Dispatch
import EventLoop
import Onboarding
import ProxyCore
import TLSInspection
import WireGuard

/// The proxy's own pages: the onboarding site every loop answers with, built from the settings,
/// the CA read at start and the addresses the listeners bound.
extension Daemon {
    /// Where a phone can reach the proxy (``DeviceAddresses``): its proxy listeners, which come
    /// first; a transparent or WireGuard listener takes no proxy requests.
    var deviceAddresses: [String] {
        DeviceAddresses.of(
            listeners: boundListeners.prefix(configuration.listeners.count).compactMap {
                try? SocketAddress(parsing: $0)
            })
    }

    /// The live view's URL as the machine running the proxy opens it; nil when there is none.
    var webURL: String? {
        guard let address = web?.address else { return nil }
        let host = address.ipAddress.map { $0 == .v4(0) || $0 == .v6(high: 0, low: 0) ? "127.0.0.1" : $0.description }
        return "http://\(host.map { $0.contains(":") ? "[\($0)]" : $0 } ?? "127.0.0.1"):\(address.port)/"
    }

    /// The live view's URL as a phone would open it: only when the web listener is reachable beyond
    /// this machine (its page asks for the token); nil otherwise, since 127.0.0.1 on a phone is the phone.
    var deviceWebURL: String? {
        guard let address = web?.address, !address.isLoopback else { return nil }
        let listener = address.ipAddress?.unmapped
        let host: String?
        if listener == .v4(0) || listener == .v6(high: 0, low: 0) {
            host = deviceAddresses.first.map { String($0[..<($0.lastIndex(of: ":") ?? $0.endIndex)]) }
        } else {
            host = listener.map { HostIdentity.address($0).urlForm }
        }
        return host.map { "http://\($0):\(address.port)/" }
    }

    /// The onboarding site for `configuration`: its PAC hosts and inspect mode, the CA read at start.
    func onboardingSite(for configuration: DaemonConfiguration) -> OnboardingSite {
        // The PEM is written from the certificate just read: without it there is nothing to offer.
        let downloads = authority.flatMap { authority in (try? authority.pem).map { (authority, $0) } }.map {
            authority, pem in
            OnboardingConfiguration.CADownloads(
                pem: pem, der: authority.der, mobileconfig: authority.mobileConfig(),
                sha256Fingerprint: authority.sha256Fingerprint, subject: Self.trustSettingsName(authority.subject),
                notAfter: authority.notAfter)
        }
        return OnboardingSite(
            configuration: OnboardingConfiguration(
                addresses: deviceAddresses, authority: downloads,
                // Both are host patterns checked the same way when the settings were read.
                pacHosts: configuration.pacHosts.compactMap { try? PACHostPattern($0.description) },
                inspectMode: configuration.intercept.mode == .intercept ? .intercept : .tunnel,
                liveViewURL: deviceWebURL,
                wireguard: configuration.wireguard.map { settings in
                    OnboardingConfiguration.WireGuardOffer(
                        endpoint: settings.directory.recordedEndpoint() ?? settings.listen.description)
                }))
    }

    /// The name iOS lists under Certificate Trust Settings: the subject's CN ("atsproxy CA (host)"),
    /// or the whole subject when it has none.
    static func trustSettingsName(_ subject: String) -> String {
        for part in subject.split(separator: ",") where part.hasPrefix("CN=") { return String(part.dropFirst(3)) }
        return subject
    }

    /// Puts the onboarding site on every loop and waits until each has it.
    func installOnboarding() {
        let site = onboardingSite(for: configuration)
        onboarding = site
        let applied = DispatchSemaphore(value: 0)
        broadcast(
            .settingsChanged(
                configuration.proxySettings(policy: policy.policy, hosts: hosts, onboarding: site),
                listenerClasses: configuration.listeners.map(\.clientClass), applied: { applied.signal() }))
        let deadline = DispatchTime.now() + .seconds(2)
        for _ in loops {
            guard applied.wait(timeout: deadline) == .success else { break }
        }
    }
}
