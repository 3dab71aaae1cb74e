import LogRecord

/// Which of the log's lines `report` and `har` are about: `--app`, `--host`, `--client` and `--device`. Each may
/// be given several times (a line matches any of its values); the kinds given must all match. An
/// empty selection takes every line.
package struct TrafficSelection: Sendable, Equatable {
    /// App names as ``AppAgent/label`` gives them, any case; `other` for browsers and other agents.
    package var apps: [String]
    package var hosts: [HostPattern]
    /// Device addresses (`192.168.1.23`, `2001:db8::1`), or an address and port as logged
    /// (`192.168.1.23:50312`, `[2001:db8::1]:50312`) for one connection's.
    package var clients: [String]
    /// WireGuard peers by name (`atsproxyctl wireguard add-device NAME`), exactly as logged.
    package var devices: [String]

    package init(apps: [String] = [], hosts: [HostPattern] = [], clients: [String] = [], devices: [String] = []) {
        self.apps = apps
        self.hosts = hosts
        self.clients = clients
        self.devices = devices
    }

    package var isEmpty: Bool { apps.isEmpty && hosts.isEmpty && clients.isEmpty && devices.isEmpty }

    package func matches(_ record: LoggedConnection) -> Bool {
        matches(app: record.app, client: record.client, device: record.device) && matchesHost([record.host])
    }

    /// A request matches by its connection's host or by its URL's.
    package func matches(_ request: LoggedRequest) -> Bool {
        matches(app: request.app, client: request.client, device: request.device)
            && matchesHost([request.host] + (HTTPArchive.host(ofURL: request.url).map { [$0] } ?? []))
    }

    private func matches(app: AppAgent?, client: String?, device: String?) -> Bool {
        if !devices.isEmpty {
            guard let device, devices.contains(device) else { return false }
        }
        if !apps.isEmpty {
            guard let label = app?.label.lowercased(), apps.contains(where: { $0.lowercased() == label }) else {
                return false
            }
        }
        if !clients.isEmpty {
            guard let client else { return false }
            let address = Self.deviceAddress(client)
            // A value with a port names one connection; an address alone, every connection of the device.
            // A WireGuard device is also named by its name (the live view's client filter).
            let named = clients.contains { given in
                given == device || (Self.deviceAddress(given) == given ? given == address : given == client)
            }
            guard named else { return false }
        }
        return true
    }

    private func matchesHost(_ names: [String]) -> Bool {
        hosts.isEmpty || hosts.contains { pattern in names.contains(where: pattern.matches) }
    }

    /// `app MyApp, host *.example.com, client 192.168.1.23`: what was selected, for people.
    package var description: String {
        var parts: [String] = []
        if !apps.isEmpty { parts.append("app " + apps.joined(separator: " or ")) }
        if !hosts.isEmpty { parts.append("host " + hosts.map(\.description).joined(separator: " or ")) }
        if !clients.isEmpty { parts.append("client " + clients.joined(separator: " or ")) }
        if !devices.isEmpty { parts.append("device " + devices.joined(separator: " or ")) }
        return parts.joined(separator: ", ")
    }

    /// `192.168.1.23:50312` → `192.168.1.23`, `[2001:db8::1]:50312` → `2001:db8::1`: the device, not
    /// the connection (the log's `client` is address and port). An address alone is returned as it is.
    /// On the UTF-8 view (the separators are ASCII): the live view calls this for every line.
    package static func deviceAddress(_ client: String) -> String {
        let bytes = client.utf8
        if bytes.first == UInt8(ascii: "["), let close = bytes.firstIndex(of: UInt8(ascii: "]")) {
            return String(client[bytes.index(after: bytes.startIndex)..<close])
        }
        if let colon = bytes.lastIndex(of: UInt8(ascii: ":")), bytes.firstIndex(of: UInt8(ascii: ":")) == colon {
            return String(client[..<colon])
        }
        return client
    }
}

extension LogCollection {
    /// The lines `selection` takes, with the files and skipped lines as they were read.
    package func selecting(_ selection: TrafficSelection) -> LogCollection {
        guard !selection.isEmpty else { return self }
        var selected = self
        selected.keep(records: records.filter(selection.matches), requests: requests.filter(selection.matches))
        return selected
    }
}
