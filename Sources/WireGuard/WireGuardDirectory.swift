import Glibc
import POSIX
import TLSInspection
import TextFormats

/// The WireGuard state directory (`--wireguard-dir`, `/var/lib/atsproxy/wireguard` under systemd):
/// the proxy's private key (`server.key`) and one `.conf` per device (`devices/NAME.conf`, the
/// device's own configuration, its private key included). Every file is 0600, and a file made by
/// root (`atsproxyctl` under sudo) is given to the directory's owner, the daemon's user.
///
/// The daemon and `atsproxyctl wireguard` share it: the tool adds and removes devices, the daemon
/// reads them at start and on every reload (which `add-device` and `remove-device` ask for).
package struct WireGuardDirectory: Sendable {
    package let path: String

    package static let defaultPath = "/var/lib/atsproxy/wireguard"
    package static let serverKeyFileName = "server.key"
    package static let devicesDirectoryName = "devices"

    package init(path: String) { self.path = path }

    package var serverKeyPath: String { path + "/" + Self.serverKeyFileName }
    package var devicesPath: String { path + "/" + Self.devicesDirectoryName }
    package func devicePath(_ name: String) -> String { devicesPath + "/" + name + ".conf" }

    // MARK: - The proxy's key

    /// The proxy's private key, made (with the directory) when there is none yet.
    package func serverKey() throws(WireGuardStateError) -> WireGuardKey {
        if let key = try existingServerKey() { return key }
        try makeDirectories()
        let key: WireGuardKey
        do { key = try WireGuardKey.generate() } catch {
            throw WireGuardStateError(path: serverKeyPath, problem: .key(error.description))
        }
        do {
            try create(serverKeyPath, Array((key.base64 + "\n").utf8))
        } catch  where error.problem == .exists {
            // Another process made it first: theirs is the key.
            if let theirs = try existingServerKey() { return theirs }
        }
        return key
    }

    /// The proxy's private key; nil when none was made yet.
    package func existingServerKey() throws(WireGuardStateError) -> WireGuardKey? {
        guard let text = try readPrivate(serverKeyPath) else { return nil }
        guard let key = WireGuardKey(base64: text.trimmingWhitespace) else {
            throw WireGuardStateError(path: serverKeyPath, problem: .malformed(line: 1, "not a base64 key of 32 bytes"))
        }
        return key
    }

    // MARK: - The endpoint

    package static let endpointFileName = "endpoint"

    /// Records where devices reach the tunnel (`HOST:PORT`), for `add-device` to default to: the
    /// daemon writes it at start, from its --wireguard-listen and this machine's addresses.
    package func recordEndpoint(_ endpoint: String) throws(WireGuardStateError) {
        let file = path + "/" + Self.endpointFileName
        guard Self.isEndpoint(endpoint) else {
            throw WireGuardStateError(path: file, problem: .malformed(line: nil, "\(endpoint) is not HOST:PORT"))
        }
        if recordedEndpoint() == endpoint { return }
        unlink(file)
        try create(file, Array((endpoint + "\n").utf8))
    }

    /// The endpoint the daemon recorded; nil when none was.
    package func recordedEndpoint() -> String? {
        guard let contents = try? FileContents.read(path + "/" + Self.endpointFileName, maximumSize: 1024) else {
            return nil
        }
        let text = String(decoding: contents.bytes, as: UTF8.self).trimmingWhitespace
        return Self.isEndpoint(text) ? text : nil
    }

    /// `HOST:PORT` as a configuration line can hold it: a name or address (IPv6 in brackets) and a
    /// port, nothing that could end the line or start another.
    package static func isEndpoint(_ text: String) -> Bool {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]), port > 0,
            colon > text.startIndex, text.count <= 260
        else { return false }
        return text[..<colon].unicodeScalars.allSatisfy { scalar in
            scalar.properties.isASCIIHexDigit || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
                || ("0"..."9").contains(scalar) || ".-:[]".unicodeScalars.contains(scalar)
        }
    }

    // MARK: - Devices

    /// Every device, by name.
    package func devices() throws(WireGuardStateError) -> [WireGuardDevice] {
        guard let directory = opendir(devicesPath) else {
            if errno == ENOENT { return [] }
            throw WireGuardStateError(path: devicesPath, problem: .unreadable(String(cString: strerror(errno))))
        }
        var names: [String] = []
        while let entry = readdir(directory) {
            let fileName = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard fileName.hasSuffix(".conf") else { continue }
            let name = String(fileName.dropLast(5))
            if WireGuardDeviceName.isValid(name) { names.append(name) }
        }
        closedir(directory)
        var devices: [WireGuardDevice] = []
        for name in names.sorted() {
            guard let text = try readPrivate(devicePath(name)) else { continue }  // Removed meanwhile.
            let device: WireGuardDevice
            do {
                device = try WireGuardDevice(name: name, configuration: text)
            } catch {
                throw WireGuardStateError(path: devicePath(name), problem: error)
            }
            // One address, one device: two would make WireGuard route it to one and the log name the other.
            if let other = devices.first(where: { $0.octet == device.octet }) {
                throw WireGuardStateError(
                    path: devicePath(name),
                    problem: .malformed(
                        line: nil, "\(device.address) is \(other.name)'s address too (remove-device one)"))
            }
            devices.append(device)
        }
        return devices
    }

    /// Makes device `name` at the lowest free address, with a key of its own, reached at `endpoint`.
    package func addDevice(_ name: String, endpoint: String) throws(WireGuardStateError) -> WireGuardDevice {
        guard WireGuardDeviceName.isValid(name) else {
            throw WireGuardStateError(path: name, problem: .invalidName)
        }
        guard Self.isEndpoint(endpoint) else {
            throw WireGuardStateError(path: endpoint, problem: .malformed(line: nil, "not HOST:PORT"))
        }
        return try exclusively { () throws(WireGuardStateError) in
            // The proxy's key too: made by the first of two runs on a fresh directory, read whole by the other.
            try makeDevice(name, endpoint: endpoint, serverKey: try serverKey())
        }
    }

    /// ``addDevice(_:endpoint:)``'s choice of address and its file, under the directory's lock.
    private func makeDevice(
        _ name: String, endpoint: String, serverKey: WireGuardKey
    ) throws(WireGuardStateError) -> WireGuardDevice {
        let existing = try devices()
        guard !existing.contains(where: { $0.name == name }) else {
            throw WireGuardStateError(path: devicePath(name), problem: .exists)
        }
        let taken = Set(existing.map(\.octet))
        guard let octet = WireGuardNetwork.deviceOctets.first(where: { !taken.contains($0) }) else {
            throw WireGuardStateError(path: devicesPath, problem: .full)
        }
        let device: WireGuardDevice
        do {
            device = WireGuardDevice(
                name: name, octet: octet, privateKey: try WireGuardKey.generate(),
                serverPublicKey: try serverKey.publicKey(), endpoint: endpoint)
        } catch {
            throw WireGuardStateError(path: devicePath(name), problem: .key(error.description))
        }
        try create(devicePath(name), Array(device.configuration.utf8))
        return device
    }

    /// Forgets device `name`: its key no longer opens the tunnel once the daemon reloads.
    package func removeDevice(_ name: String) throws(WireGuardStateError) {
        guard WireGuardDeviceName.isValid(name) else { throw WireGuardStateError(path: name, problem: .invalidName) }
        guard unlink(devicePath(name)) == 0 else {
            let code = errno
            throw WireGuardStateError(
                path: devicePath(name),
                problem: code == ENOENT ? .noSuchDevice : .cannotWrite(String(cString: strerror(code))))
        }
    }

    // MARK: - Files

    package static let lockFileName = "lock"

    /// Runs `body` holding the directory's lock (`flock` on `lock`): two `add-device` runs at once, a
    /// lab's script adding a fleet, would otherwise both see an address free and both take it.
    private func exclusively<Result>(
        _ body: () throws(WireGuardStateError) -> Result
    ) throws(WireGuardStateError) -> Result {
        try makeDirectories()
        let lockPath = path + "/" + Self.lockFileName
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw WireGuardStateError(path: lockPath, problem: .cannotWrite(String(cString: strerror(errno))))
        }
        defer { close(descriptor) }  // Releases the lock too.
        // The file opened, not the path: a hard link planted as `lock` is refused, never chowned.
        var file = stat()
        guard fstat(descriptor, &file) == 0, file.st_mode & S_IFMT == S_IFREG, file.st_nlink == 1 else {
            throw WireGuardStateError(path: lockPath, problem: .cannotWrite("not a regular file of its own"))
        }
        var owner = stat()
        if geteuid() == 0, file.st_uid == 0, stat(path, &owner) == 0, owner.st_uid != 0 {
            _ = fchown(descriptor, owner.st_uid, owner.st_gid)
        }
        while flock(descriptor, LOCK_EX) == -1 {
            guard errno == EINTR else {
                throw WireGuardStateError(path: lockPath, problem: .cannotWrite(String(cString: strerror(errno))))
            }
        }
        return try body()
    }

    /// The state directory and `devices/`, made 0700 when missing: a directory root makes goes to
    /// the owner of the directory above it (the daemon's user, under systemd's StateDirectory). A
    /// symbolic link in their place is refused: root would write keys where it points.
    private func makeDirectories() throws(WireGuardStateError) {
        for directory in [path, devicesPath] {
            var status = stat()
            let existed = lstat(directory, &status) == 0
            do { try FileCreation.makeDirectory(directory, mode: 0o700) } catch {
                throw WireGuardStateError(path: error.path, problem: .cannotWrite(error.reason))
            }
            guard lstat(directory, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
                throw WireGuardStateError(path: directory, problem: .cannotWrite("not a directory (a symbolic link?)"))
            }
            if !existed {
                let parent = String(directory[..<(directory.lastIndex(of: "/") ?? directory.startIndex)])
                giveToOwner(directory, as: parent.isEmpty ? "/" : parent)
            }
        }
    }

    /// Creates `file` 0600 (never over an existing one), owned as the state directory is.
    private func create(_ file: String, _ bytes: [UInt8]) throws(WireGuardStateError) {
        try makeDirectories()
        do { try FileCreation.create(file, mode: 0o600, bytes: bytes) } catch {
            throw WireGuardStateError(path: file, problem: error.exists ? .exists : .cannotWrite(error.reason))
        }
        giveToOwner(file, as: path)
    }

    /// Root's files go to the owner of `directory`, so the daemon's user reads what `sudo
    /// atsproxyctl` wrote. Anyone else's files are theirs already. lchown: a link put in the
    /// file's place meanwhile is what changes owner, never what it points to.
    private func giveToOwner(_ file: String, as directory: String) {
        var owner = stat()
        guard geteuid() == 0, stat(directory, &owner) == 0, owner.st_uid != 0 else { return }
        _ = lchown(file, owner.st_uid, owner.st_gid)
    }

    /// A key's file, refused when group or others may read it; nil when there is none.
    private func readPrivate(_ file: String) throws(WireGuardStateError) -> String? {
        let contents: FileContents
        do {
            contents = try FileContents.read(file, maximumSize: 64 * 1024)
        } catch {
            if case .open(ENOENT) = error.problem { return nil }
            throw WireGuardStateError(path: file, problem: .unreadable(error.reason))
        }
        guard contents.mode & 0o077 == 0 else {
            throw WireGuardStateError(path: file, problem: .tooOpen(mode: contents.mode))
        }
        return String(decoding: contents.bytes, as: UTF8.self)
    }
}
