/// What the onboarding site and banner show: where the proxy is, the CA to install (if any), which
/// hosts the PAC file sends to the proxy, and how the proxy inspects TLS. A value the daemon builds
/// at start (and again on reload) and hands to ``OnboardingSite`` and ``OnboardingBanner``.
///
/// Onboarding depends on neither TLSInspection nor the daemon: the daemon copies the CA's bytes and
/// facts into ``CADownloads``.
package struct OnboardingConfiguration: Sendable {
    /// How the proxy treats TLS, as `--inspect` says.
    package enum InspectMode: String, Sendable, Equatable {
        /// The device's TLS is relayed unread: no CA is needed on the device.
        case tunnel
        /// The proxy terminates the device's TLS with leaves minted by its CA: the device must trust it.
        case intercept
    }

    /// The CA certificate in the forms a device takes, with the facts the page shows beside it.
    package struct CADownloads: Sendable, Equatable {
        /// The certificate as PEM text (`/ca.pem`).
        package var pem: [UInt8]
        /// The certificate as DER (`/ca.cer`).
        package var der: [UInt8]
        /// The iOS configuration profile that installs it (`/ca.mobileconfig`).
        package var mobileconfig: [UInt8]
        /// The certificate's SHA-256 fingerprint as colon-separated hex, as `atsproxyctl ca show` prints it.
        package var sha256Fingerprint: String
        /// The certificate's subject, as text (the name iOS shows under Certificate Trust Settings).
        package var subject: String
        /// When the certificate expires, in seconds since 1970 (UTC).
        package var notAfter: Int64

        package init(
            pem: [UInt8], der: [UInt8], mobileconfig: [UInt8], sha256Fingerprint: String, subject: String,
            notAfter: Int64
        ) {
            self.pem = pem
            self.der = der
            self.mobileconfig = mobileconfig
            self.sha256Fingerprint = sha256Fingerprint
            self.subject = subject
            self.notAfter = notAfter
        }
    }

    /// The proxy's addresses a device can reach, as "host:port" ("[v6]:port" for IPv6): the URLs
    /// the page and the banner show and draw as QR codes. Empty when the proxy listens on loopback
    /// only; loopback addresses given here are dropped (a phone cannot reach them).
    package var addresses: [String]
    /// The CA's downloads; nil when there is none (tunnel mode needs none).
    package var authority: CADownloads?
    /// `--pac-hosts`: the only hosts `/proxy.pac` sends to the proxy; empty for every host.
    package var pacHosts: [PACHostPattern]
    package var inspectMode: InspectMode
    /// The live view's URL, linked from the page when set.
    package var liveViewURL: String?
    /// `--wireguard-listen`'s tunnel, offered as a second way in; nil without one.
    package var wireguard: WireGuardOffer?

    /// What the page says of the WireGuard tunnel: where phones reach it.
    package struct WireGuardOffer: Sendable, Equatable {
        /// `host:port` a phone sends its WireGuard packets to (as `add-device` puts it in configurations).
        package var endpoint: String

        package init(endpoint: String) { self.endpoint = endpoint }

        /// The WireGuard app in the App Store, which the page's QR code opens.
        package static let appStoreURL = "https://apps.apple.com/app/wireguard/id1441195209"
    }

    package init(
        addresses: [String], authority: CADownloads?, pacHosts: [PACHostPattern] = [], inspectMode: InspectMode,
        liveViewURL: String? = nil, wireguard: WireGuardOffer? = nil
    ) {
        self.addresses = addresses.filter { !ListenerAddress($0).isLoopback }
        self.authority = authority
        self.pacHosts = pacHosts
        self.inspectMode = inspectMode
        self.liveViewURL = liveViewURL
        self.wireguard = wireguard
    }
}

/// Texts the page, the downloads' 404 and the banner share, so they say the same thing.
enum HowTo {
    /// How to get a CA when there is none.
    static let makeCA = """
        atsproxy has no CA yet. Make one with `atsproxyctl ca init` and restart atsproxy with \
        `--inspect intercept` (or run `make run INSPECT=intercept`, which makes one on first run).
        """

    /// How to make the proxy reachable from a phone when it listens on loopback only.
    static let listenOnLAN = """
        atsproxy listens on loopback only, which a phone cannot reach. Restart it listening on the \
        LAN and allowing the LAN's clients: `--listen 0.0.0.0:8080 --allow-client 192.168.0.0/16` \
        (or the config-file keys `listen` and `allow-client`).
        """
}
