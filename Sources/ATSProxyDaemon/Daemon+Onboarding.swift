import ATSPolicy
import Dispatch
import EventLoop
import Onboarding
import ProxyCore
import TLSInspection

/// The proxy's own pages: the onboarding site every loop answers with, built from the settings,
/// the CA read at start and the addresses the listeners bound.
extension Daemon {
    /// Where a phone can reach the proxy (``DeviceAddresses``).
    var deviceAddresses: [String] {
        DeviceAddresses.of(listeners: boundListeners.compactMap { try? SocketAddress(parsing: $0) })
    }

    /// The live view's URL as the machine running the proxy opens it; nil when there is none.
    var webURL: String? {
        guard let address = web?.address else { return nil }
        let host = address.ipAddress.map { $0 == .v4(0) || $0 == .v6(high: 0, low: 0) ? "127.0.0.1" : $0.description }
        return "http://\(host.map { $0.contains(":") ? "[\($0)]" : $0 } ?? "127.0.0.1"):\(address.port)/"
    }

    /// The onboarding site for `configuration`: its PAC hosts and inspect mode, the CA read at start.
    func onboardingSite(for configuration: DaemonConfiguration) -> OnboardingSite {
        // The PEM is written from the certificate just read: without it there is nothing to offer.
        let downloads = authority.flatMap { authority in (try? authority.pem).map { (authority, $0) } }.map { authority, pem in
            OnboardingConfiguration.CADownloads(
                pem: pem, der: authority.der, mobileconfig: authority.mobileConfig(),
                sha256Fingerprint: authority.sha256Fingerprint, subject: authority.subject, notAfter: authority.notAfter)
        }
        return OnboardingSite(
            configuration: OnboardingConfiguration(
                addresses: deviceAddresses, authority: downloads,
                // Both are host patterns checked the same way when the settings were read.
                pacHosts: configuration.pacHosts.compactMap { try? PACHostPattern($0.description) },
                inspectMode: configuration.intercept.mode == .intercept ? .intercept : .tunnel, liveViewURL: webURL))
    }

    /// Puts the onboarding site on every loop and waits until each has it.
    func installOnboarding() {
        let site = onboardingSite(for: configuration)
        onboarding = site
        let applied = DispatchSemaphore(value: 0)
        broadcast(.settingsChanged(
            configuration.proxySettings(policy: policy.policy, hosts: hosts, onboarding: site),
            listenerClasses: configuration.listeners.map(\.clientClass), applied: { applied.signal() }))
        let deadline = DispatchTime.now() + .seconds(2)
        for _ in loops {
            guard applied.wait(timeout: deadline) == .success else { break }
        }
    }
}
