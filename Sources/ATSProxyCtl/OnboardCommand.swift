import ATSPolicy
import ArgumentParser
import ControlProtocol
import Onboarding
import ProxyWire
import TextFormats

/// `atsproxyctl onboard`: the running daemon's onboarding URLs again, each with its QR code, for a
/// phone to scan (what the daemon printed at start, which has scrolled away in a journal).
struct OnboardCommand: ParsableCommand, DaemonQuery {
    static let configuration = CommandConfiguration(
        commandName: "onboard",
        abstract: "Show QR codes of the running proxy's onboarding page, for a phone to scan.",
        discussion: """
            Asks the daemon for the addresses a phone can reach it at (each listener's, or every \
            interface's for 0.0.0.0) and draws a QR code of http://ADDRESS:PORT/ for each. The page \
            tells the phone how to use the proxy, installs and checks the CA, and links to \
            http://\(OnboardingHost.name)/, which only a phone using the proxy can open. A proxy on \
            loopback only has no such address: the text says how to listen on the LAN.

            """ + DaemonCommandHelp.footer("onboard"))
    static let command = ControlCommand.status

    @OptionGroup var socket: ControlSocketOptions

    func describe(_ answer: JSONValue, to output: Output) {
        let onboarding = answer["onboarding"]
        let addresses = onboarding?["addresses"]?.arrayValue?.compactMap(\.stringValue) ?? []
        output.write(OnboardingBanner(addresses: addresses).text)
        if let live = onboarding?["live_view"]?.stringValue {
            output.line("Live view (on the proxy's machine): \(live)")
        }
    }
}
