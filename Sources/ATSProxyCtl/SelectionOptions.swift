import ArgumentParser
import TrafficReport
import WireGuard

/// `--app`, `--host`, `--client` and `--device`: which of the log's lines `report` and `har` are about
/// (``TrafficSelection``).
struct SelectionOptions: ParsableArguments {
    @Option(
        name: .customLong("app"),
        help: ArgumentHelp(
            "Only lines of this app: its name as its User-Agent gives it (MyApp), or other for browsers and other agents (repeatable).",
            valueName: "name"))
    var apps: [String] = []

    @Option(
        name: .customLong("host"),
        help: ArgumentHelp(
            "Only lines of this host: an exact name, or *.suffix for the names under suffix (repeatable).",
            valueName: "pattern"))
    var hosts: [String] = []

    @Option(
        name: .customLong("client"),
        help: ArgumentHelp(
            "Only lines of this device: its address (192.168.1.23), or address:port for one connection (repeatable).",
            valueName: "address"))
    var clients: [String] = []

    @Option(
        name: .customLong("device"),
        help: ArgumentHelp(
            "Only lines of this WireGuard device: its name from atsproxyctl wireguard add-device (repeatable).",
            valueName: "name"))
    var devices: [String] = []

    /// The selection; nil, once the reason is on standard error, when an option is malformed.
    func selection(reportingTo output: Output) -> TrafficSelection? {
        do {
            return try selection()
        } catch {
            output.error("atsproxyctl: error: \(error)")
            return nil
        }
    }

    /// The selection, or why an option is malformed (`--host: "a b" is not a host name …`).
    func selection() throws(SelectionError) -> TrafficSelection {
        var patterns: [HostPattern] = []
        for host in hosts {
            do {
                patterns.append(try HostPattern(parsing: host))
            } catch {
                throw SelectionError(description: "--host: \(error)")
            }
        }
        for app in apps where app.allSatisfy(\.isWhitespace) {
            throw SelectionError(description: "--app: \"\(app)\" names no app")
        }
        for client in clients where client.isEmpty || client.contains(" ") || client.contains("/") {
            throw SelectionError(description: "--client: \"\(client)\" is not an address or address:port")
        }
        for device in devices where !WireGuardDeviceName.isValid(device) {
            throw SelectionError(
                description: "--device: \"\(device)\" is not a device name (\(WireGuardDeviceName.rule))")
        }
        return TrafficSelection(apps: apps, hosts: patterns, clients: clients, devices: devices)
    }
}

/// A malformed `--app`, `--host` or `--client`.
struct SelectionError: Error, CustomStringConvertible {
    var description: String
}
