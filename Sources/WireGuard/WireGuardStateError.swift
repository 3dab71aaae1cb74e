/// Why the WireGuard state directory (`--wireguard-dir`) or a file in it cannot be used, naming the
/// file and, for a malformed one, the line.
package struct WireGuardStateError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Problem: Error, Sendable, Equatable {
        case unreadable(String)
        case cannotWrite(String)
        /// Group or others may read a key: refused, as ssh refuses such a key.
        case tooOpen(mode: UInt32)
        case malformed(line: Int?, String)
        case invalidName
        case exists
        case noSuchDevice
        /// Every address of the tunnel's network is a device's.
        case full
        case key(String)
    }

    package var path: String
    package var problem: Problem

    package init(path: String, problem: Problem) {
        self.path = path
        self.problem = problem
    }

    package var description: String {
        switch problem {
        case .unreadable(let reason): "\(path): cannot read: \(reason)"
        case .cannotWrite(let reason): "\(path): cannot write: \(reason)"
        case .tooOpen(let mode):
            "\(path): mode \(String(mode & 0o777, radix: 8)) lets others read a private key; chmod 600 it"
        case .malformed(let line?, let reason): "\(path):\(line): \(reason)"
        case .malformed(nil, let reason): "\(path): \(reason)"
        case .invalidName: "\(path): not a device name (\(WireGuardDeviceName.rule))"
        case .exists: "\(path): a device of that name exists (remove-device it first, or pick another name)"
        case .noSuchDevice: "\(path): no such device (atsproxyctl wireguard list shows them)"
        case .full: "\(path): every address of \(WireGuardNetwork.cidr) is a device's (remove-device one)"
        case .key(let reason): "\(path): \(reason)"
        }
    }
}
