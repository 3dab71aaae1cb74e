import ProxyWire

/// What the daemon prints at start and `atsproxyctl onboard` prints: one line saying what to do,
/// then for each address the QR code of `http://<address>/` and the URL as text; with no address a
/// phone can reach, how to listen on the LAN instead.
package struct OnboardingBanner: Sendable {
    /// The proxy's addresses as "host:port"; loopback ones are left out (a phone cannot reach them).
    package let addresses: [String]

    package init(addresses: [String]) {
        self.addresses = addresses.filter { !ListenerAddress($0).isLoopback }
    }

    /// The same addresses the onboarding site shows.
    package init(configuration: OnboardingConfiguration) {
        self.init(addresses: configuration.addresses)
    }

    /// The onboarding URL of each address, `http://<address>/`.
    package var urls: [String] { addresses.map { "http://\($0)/" } }

    /// The banner, ending in a newline. QR codes are drawn light on dark, as `qrencode -t UTF8` does
    /// (``QRCode/terminalText``).
    package var text: String {
        guard !addresses.isEmpty else {
            return "Onboarding: \(HowTo.listenOnLAN)\n"
        }
        var text = """
            Onboarding: on the iPhone, scan a code with the camera (or open its URL in Safari) and follow \
            the page; once the Wi-Fi proxy is set, http://\(OnboardingHost.name)/ shows it is used.

            """
        for url in urls {
            // A host:port always fits; should one not, the URL alone still onboards.
            if let code = try? QRCode(url) { text += code.terminalText }
            text += url + "\n"
        }
        return text
    }
}
