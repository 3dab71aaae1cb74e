import ArgumentParser
import ControlProtocol
import Foundation
import Onboarding
import POSIX
import TLSInspection
import TextFormats
import WireGuard

/// `atsproxyctl wireguard add-device|remove-device|list|show-device`: the phones that reach
/// atsproxy through its WireGuard tunnel (atsproxy --wireguard-listen).
struct WireGuardCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wireguard",
        abstract: "Add, remove and list the devices of atsproxy's WireGuard tunnel.",
        discussion: """
            With --wireguard-listen, atsproxy runs a WireGuard tunnel that phones join with the WireGuard \
            app: every app's HTTP and HTTPS is then judged, proxy setting or not, on any network, and each \
            line names the device (device: NAME). The devices live in the daemon's --wireguard-dir \
            (default \(WireGuardDirectory.defaultPath)), one 0600 .conf each; after a change the running \
            daemon is told to reload, which gives WireGuard the new keys without cutting the others.

            docs/capture.md walks through it.

            Examples:
              atsproxyctl wireguard add-device alice-iphone
              atsproxyctl wireguard list
              atsproxyctl wireguard remove-device alice-iphone
            """,
        subcommands: [
            WireGuardAddCommand.self, WireGuardRemoveCommand.self, WireGuardListCommand.self, WireGuardShowCommand.self,
        ])
}

/// `--dir` and `--socket`: where the devices are and which daemon to tell.
struct WireGuardLocation: ParsableArguments {
    @Option(name: .customLong("dir"), help: "The WireGuard state directory (atsproxy's --wireguard-dir).")
    var directory = WireGuardDirectory.defaultPath

    @Option(help: "The daemon's control socket, told to reload after a change (its --control-socket).")
    var socket = ControlSocketOptions.defaultPath

    var state: WireGuardDirectory { WireGuardDirectory(path: directory) }

    /// Asks the running daemon to reload (and so to give WireGuard the devices' keys), and says
    /// what happened: a daemon that is not running applies them when it starts.
    func tellDaemon(_ output: Output) {
        do {
            let answer = try JSONValue(parsing: try ControlClient.send(.reload, to: socket))
            if answer["ok"]?.boolValue == true {
                output.line("The running atsproxy reloaded: the change is in force.")
            } else {
                let reason = answer["error"]?.stringValue ?? "no reason given"
                output.error("atsproxyctl: the daemon refused to reload: \(reason)")
            }
        } catch {
            output.line("No atsproxy answered on \(socket): the change applies when it starts.")
        }
    }
}

/// `--ca-dir` and `--output-dir`: a device's `.conf` and `.mobileconfig`, written.
struct WireGuardDeviceFiles: ParsableArguments {
    @Option(help: "The CA the .mobileconfig installs with the tunnel (atsproxy's --ca-dir).")
    var caDir = CertificateAuthority.defaultDirectory

    @Option(help: "Where NAME.conf and NAME.mobileconfig go.")
    var outputDir = "."

    /// Writes NAME.conf, and NAME.mobileconfig when there is a CA, each 0600 (they hold the
    /// device's private key), replacing older ones; says what it wrote, or why not.
    func write(_ device: WireGuardDevice, _ output: Output) -> Bool {
        let authority = try? CertificateAuthority.load(from: caDir)
        let conf = outputDir + "/" + device.name + ".conf"
        let profile = outputDir + "/" + device.name + ".mobileconfig"
        var files = [(conf, Array(device.configuration.utf8))]
        if let authority { files.append((profile, WireGuardProfile.mobileConfig(device, authority: authority))) }
        do {
            for (path, bytes) in files {
                unlink(path)
                try FileCreation.create(path, mode: 0o600, bytes: bytes)
            }
        } catch {
            output.error("atsproxyctl: error: \(error) (show-device \(device.name) --output-dir DIR writes them again)")
            return false
        }
        if authority == nil {
            output.line("Or import \(conf) in the WireGuard app.")
            output.line(
                "No CA in \(caDir), so no .mobileconfig (one profile for the CA and the tunnel): after "
                    + "atsproxyctl ca init, show-device \(device.name) --output-dir DIR writes it.")
        } else {
            output.line("Or install \(profile) (the atsproxy CA and the tunnel, one profile), or import \(conf).")
        }
        return true
    }
}

/// `atsproxyctl wireguard add-device NAME`
struct WireGuardAddCommand: ParsableCommand, OutputCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-device",
        abstract: "Add a device: its keys, tunnel address, QR code, .conf and .mobileconfig.",
        discussion: """
            Prints a QR code the WireGuard app scans (Add a tunnel → Create from QR code), and writes two \
            files to --output-dir: NAME.conf (the same configuration, for the app's Create from file) and \
            NAME.mobileconfig, one profile that installs both the atsproxy CA (from --ca-dir, for \
            intercept mode) and the tunnel. Both hold the device's private key: hand them over as you \
            would a password.

            --endpoint is where the phone sends its packets: this machine's address and the UDP port of \
            --wireguard-listen. By default, what the running daemon recorded in the directory.

            Exit status: 0 added; 2 a bad name, a device of that name, no endpoint, or an unusable directory.

            Examples:
              atsproxyctl wireguard add-device alice-iphone
              atsproxyctl wireguard add-device lab-ipad-3 --endpoint 192.168.1.10:51820 --output-dir /tmp
            """)

    @Argument(help: "The device's name (letters, digits, '.', '_', '-'; at most 32).")
    var name: String

    @Option(help: "HOST:PORT the device reaches the tunnel at (default: the one atsproxy recorded).")
    var endpoint: String?

    @OptionGroup var files: WireGuardDeviceFiles

    @OptionGroup var location: WireGuardLocation

    func execute(_ output: Output) -> Int32 {
        let state = location.state
        guard let endpoint = endpoint ?? state.recordedEndpoint() else {
            output.error(
                "atsproxyctl: error: no endpoint: give --endpoint HOST:PORT (this machine's address and "
                    + "--wireguard-listen's port), or start atsproxy with --wireguard-listen first")
            return ExitStatus.badInput
        }
        let device: WireGuardDevice
        do { device = try state.addDevice(name, endpoint: endpoint) } catch {
            output.error("atsproxyctl: error: \(error)")
            return ExitStatus.badInput
        }
        output.line("Added \(name): tunnel address \(device.address), endpoint \(endpoint).")
        output.line("Scan this with the WireGuard app (Add a tunnel → Create from QR code):")
        if let code = try? QRCode(device.configuration) { output.write(code.terminalText) }
        guard files.write(device, output) else { return ExitStatus.badInput }
        location.tellDaemon(output)
        return ExitStatus.success
    }
}

/// `atsproxyctl wireguard remove-device NAME`
struct WireGuardRemoveCommand: ParsableCommand, OutputCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove-device",
        abstract: "Remove a device: its key no longer opens the tunnel.",
        discussion: """
            Exit status: 0 removed; 2 no such device or an unusable directory.

            Example:
              atsproxyctl wireguard remove-device alice-iphone
            """)

    @Argument(help: "The device's name.")
    var name: String

    @OptionGroup var location: WireGuardLocation

    func execute(_ output: Output) -> Int32 {
        do { try location.state.removeDevice(name) } catch {
            output.error("atsproxyctl: error: \(error)")
            return ExitStatus.badInput
        }
        output.line("Removed \(name).")
        location.tellDaemon(output)
        return ExitStatus.success
    }
}

/// `atsproxyctl wireguard list`
struct WireGuardListCommand: ParsableCommand, OutputCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the devices: name, tunnel address, endpoint and public key.",
        discussion: """
            The tunnel address is the `client` of the device's lines; `report --device NAME` selects them.

            Exit status: 0 listed (none is a list too); 2 an unusable directory or device file.

            Example:
              atsproxyctl wireguard list --dir /tmp/atsproxy-wireguard
            """)

    @OptionGroup var location: WireGuardLocation

    func execute(_ output: Output) -> Int32 {
        let devices: [WireGuardDevice]
        do { devices = try location.state.devices() } catch {
            output.error("atsproxyctl: error: \(error)")
            return ExitStatus.badInput
        }
        guard !devices.isEmpty else {
            output.line("No devices in \(location.directory): atsproxyctl wireguard add-device NAME adds one.")
            return ExitStatus.success
        }
        let width = max(4, devices.map(\.name.count).max() ?? 0)
        output.line(
            "NAME".padding(toLength: width, withPad: " ", startingAt: 0) + "  ADDRESS      ENDPOINT  PUBLIC KEY")
        for device in devices {
            let key = (try? device.privateKey.publicKey().base64) ?? "?"
            output.line(
                device.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
                    + device.address.padding(toLength: 11, withPad: " ", startingAt: 0) + "  \(device.endpoint)  \(key)"
            )
        }
        return ExitStatus.success
    }
}

/// `atsproxyctl wireguard show-device NAME`
struct WireGuardShowCommand: ParsableCommand, OutputCommand {
    static let configuration = CommandConfiguration(
        commandName: "show-device",
        abstract: "Print a device's QR code and configuration again; with --output-dir, write its files again.",
        discussion: """
            Exit status: 0 shown; 2 no such device or an unusable directory.

            Examples:
              atsproxyctl wireguard show-device alice-iphone
              atsproxyctl wireguard show-device alice-iphone --output-dir /tmp
            """)

    @Argument(help: "The device's name.")
    var name: String

    @Option(help: "Write NAME.conf and NAME.mobileconfig here too.")
    var outputDir: String?

    @Option(help: "The CA the .mobileconfig installs with the tunnel (atsproxy's --ca-dir).")
    var caDir = CertificateAuthority.defaultDirectory

    @OptionGroup var location: WireGuardLocation

    func execute(_ output: Output) -> Int32 {
        let device: WireGuardDevice
        do {
            guard let found = try location.state.devices().first(where: { $0.name == name }) else {
                throw WireGuardStateError(path: location.state.devicePath(name), problem: .noSuchDevice)
            }
            device = found
        } catch {
            output.error("atsproxyctl: error: \(error)")
            return ExitStatus.badInput
        }
        if let code = try? QRCode(device.configuration) { output.write(code.terminalText) }
        output.write(device.configuration)
        if let outputDir {
            var files = WireGuardDeviceFiles()
            files.caDir = caDir
            files.outputDir = outputDir
            guard files.write(device, output) else { return ExitStatus.badInput }
        }
        return ExitStatus.success
    }
}
