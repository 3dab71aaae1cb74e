import Foundation
import Synchronization
import TLSInspection
import TLSTestSupport
import Testing
import WireGuard

/// The state directory `atsproxyctl wireguard` and the daemon share, its keys checked against
/// wireguard-tools' own `wg pubkey`, and the files the WireGuard apps import.
@Suite("WireGuard state: keys, devices and their files")
struct WireGuardStateTests {
    static let hasWG = FileManager.default.isExecutableFile(atPath: "/usr/bin/wg")

    static func scratch() throws -> String {
        let path = FileManager.default.temporaryDirectory.path + "/atsproxy-wg-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
    }

    @Test("a public key is what wg pubkey derives from the same private key", .enabled(if: hasWG))
    func publicKeyMatchesWG() throws {
        for _ in 0..<4 {
            let key = try WireGuardKey.generate()
            let derived = try runCommand("/usr/bin/wg", ["pubkey"], input: Data((key.base64 + "\n").utf8))
            #expect(derived.status == 0)
            #expect(
                derived.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == (try key.publicKey().base64))
        }
    }

    @Test("keys read back: base64 of exactly 32 bytes, nothing else")
    func keyParsing() throws {
        let key = try WireGuardKey.generate()
        #expect(WireGuardKey(base64: key.base64) == key)
        #expect(WireGuardKey(base64: "") == nil)
        #expect(WireGuardKey(base64: String(key.base64.dropLast(4))) == nil)
        #expect(WireGuardKey(base64: "AAAA") == nil)
    }

    @Test(
        "device names: letters, digits, '.', '_' and '-', at most 32, not starting with '.' or '-'",
        arguments: [
            ("alice-iphone", true), ("lab_ipad.3", true), (String(repeating: "a", count: 32), true),
            ("", false), (String(repeating: "a", count: 33), false), (".hidden", false), ("-x", false),
            ("a/b", false), ("a b", false), ("ä", false), ("../x", false),
        ])
    func names(name: String, valid: Bool) {
        #expect(WireGuardDeviceName.isValid(name) == valid)
    }

    @Test("add-device: the lowest free address, a key of its own, 0600 files; remove frees the address")
    func addAndRemove() throws {
        let state = WireGuardDirectory(path: try Self.scratch() + "/wireguard")
        let first = try state.addDevice("one", endpoint: "192.0.2.1:51820")
        let second = try state.addDevice("two", endpoint: "192.0.2.1:51820")
        #expect(first.address == "10.65.84.2" && second.address == "10.65.84.3")
        #expect(first.privateKey != second.privateKey)
        #expect(first.serverPublicKey == (try state.serverKey().publicKey()))
        #expect(try Self.mode(state.serverKeyPath) == 0o600)
        #expect(try Self.mode(state.devicePath("one")) == 0o600)
        #expect(try Self.mode(state.path) == 0o700)
        #expect(try state.devices() == [first, second])

        #expect(throws: WireGuardStateError.self) { try state.addDevice("one", endpoint: "192.0.2.1:51820") }
        #expect(throws: WireGuardStateError.self) { try state.addDevice("../evil", endpoint: "x:1") }
        try state.removeDevice("one")
        #expect(try state.devices().map(\.name) == ["two"])
        let third = try state.addDevice("three", endpoint: "192.0.2.1:51820")
        #expect(third.address == "10.65.84.2", "the freed address is taken again")
        let missing = #expect(throws: WireGuardStateError.self) { try state.removeDevice("one") }
        #expect(missing?.problem == .noSuchDevice)
    }

    @Test("add-device run many times at once: each device its own address (the directory's lock)")
    func concurrentAdds() throws {
        let state = WireGuardDirectory(path: try Self.scratch() + "/wireguard")
        _ = try state.serverKey()
        let count = 32
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: count) { index in
            do { _ = try state.addDevice("device\(index)", endpoint: "192.0.2.1:51820") } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let devices = try state.devices()
        #expect(devices.count == count)
        #expect(Set(devices.map(\.address)).count == count, "two devices share an address")
        #expect(try Self.mode(state.path + "/" + WireGuardDirectory.lockFileName) == 0o600)
    }

    @Test("a key group or others may read is refused, naming the file and the mode")
    func openKeyRefused() throws {
        let state = WireGuardDirectory(path: try Self.scratch())
        _ = try state.serverKey()
        chmod(state.serverKeyPath, 0o644)
        let error = #expect(throws: WireGuardStateError.self) { try state.existingServerKey() }
        #expect(error?.description == "\(state.serverKeyPath): mode 644 lets others read a private key; chmod 600 it")
    }

    @Test("a malformed device file is refused with its line")
    func malformedDevice() throws {
        let state = WireGuardDirectory(path: try Self.scratch())
        let device = try state.addDevice("one", endpoint: "192.0.2.1:51820")
        let broken = device.configuration.replacingOccurrences(
            of: "Address = 10.65.84.2/32", with: "Address = 10.1.2.3/32")
        try FileManager.default.removeItem(atPath: state.devicePath("one"))
        _ = FileManager.default.createFile(
            atPath: state.devicePath("one"), contents: Data(broken.utf8), attributes: [.posixPermissions: 0o600])
        let error = #expect(throws: WireGuardStateError.self) { try state.devices() }
        #expect(error?.description.hasPrefix("\(state.devicePath("one")):4: Address is not a device address") == true)
    }

    @Test(
        "the device's .conf is what wg-quick reads: wg accepts it stripped, with the keys and endpoint",
        .enabled(if: hasWG))
    func configurationIsWGQuick() throws {
        let directory = try Self.scratch()
        let state = WireGuardDirectory(path: directory + "/state")
        let device = try state.addDevice("phone", endpoint: "192.0.2.1:51820")
        let conf = directory + "/phone.conf"
        try device.configuration.write(toFile: conf, atomically: true, encoding: .utf8)
        let stripped = try runCommand("/usr/bin/wg-quick", ["strip", conf])
        #expect(stripped.status == 0, "\(stripped)")
        #expect(stripped.standardOutput.contains("PrivateKey = \(device.privateKey.base64)"))
        #expect(stripped.standardOutput.contains("Endpoint = 192.0.2.1:51820"))
        #expect(stripped.standardOutput.contains("AllowedIPs = 0.0.0.0/0, ::/0"))
        #expect(!stripped.standardOutput.contains("Address"), "wg-quick's own keys are stripped")
        #expect(try WireGuardDevice(name: "phone", configuration: device.configuration) == device)
    }

    @Test("the server's configuration names each device as a peer allowed only its own address")
    func serverConfiguration() throws {
        let state = WireGuardDirectory(path: try Self.scratch())
        let one = try state.addDevice("one", endpoint: "e:1")
        let two = try state.addDevice("two", endpoint: "e:1")
        let text = try WireGuardServerConfiguration.text(
            privateKey: try state.serverKey(), listenPort: 51820, devices: [one, two])
        #expect(text.hasPrefix("[Interface]\nPrivateKey = \(try state.serverKey().base64)\nListenPort = 51820\n"))
        #expect(text.contains("PublicKey = \(try one.privateKey.publicKey().base64)\nAllowedIPs = 10.65.84.2/32\n"))
        #expect(text.contains("PublicKey = \(try two.privateKey.publicKey().base64)\nAllowedIPs = 10.65.84.3/32\n"))
    }

    @Test("the .mobileconfig carries the CA and the WireGuard VPN payload, as wireguard-apple documents it")
    func profile() throws {
        let directory = try Self.scratch()
        let authority = try CertificateAuthority.create(in: directory + "/ca")
        let device = try WireGuardDirectory(path: directory + "/state").addDevice("phone", endpoint: "192.0.2.1:51820")
        let bytes = WireGuardProfile.mobileConfig(device, authority: authority)
        #expect(WireGuardProfile.mobileConfig(device, authority: authority) == bytes, "the same inputs, the same bytes")
        let plist = try #require(
            try PropertyListSerialization.propertyList(from: Data(bytes), format: nil) as? [String: Any])
        #expect(plist["PayloadType"] as? String == "Configuration")
        #expect(plist["PayloadIdentifier"] as? String == "atsproxy.wireguard.phone")
        let payloads = try #require(plist["PayloadContent"] as? [[String: Any]])
        #expect(payloads.map { $0["PayloadType"] as? String } == ["com.apple.security.root", "com.apple.vpn.managed"])
        #expect(payloads[0]["PayloadContent"] as? Data == Data(authority.der))
        let vpn = payloads[1]
        #expect(vpn["VPNType"] as? String == "VPN")
        #expect(vpn["VPNSubType"] as? String == "com.wireguard.ios")
        #expect((vpn["VendorConfig"] as? [String: Any])?["WgQuickConfig"] as? String == device.configuration)
        #expect((vpn["VPN"] as? [String: Any])?["RemoteAddress"] as? String == "192.0.2.1:51820")
        #expect((vpn["VPN"] as? [String: Any])?["AuthenticationMethod"] as? String == "Password")
        let uuids = [plist["PayloadUUID"], payloads[0]["PayloadUUID"], payloads[1]["PayloadUUID"]].compactMap {
            $0 as? String
        }
        #expect(Set(uuids).count == 3, "every payload has a UUID of its own")
        #expect(uuids[0] != authority.payloadUUID(for: ""), "not the CA profile's")
    }

    @Test(
        "review findings: an endpoint that is not HOST:PORT, a symlinked devices directory and two devices on one address are refused"
    )
    func refusals() throws {
        let directory = try Self.scratch()
        let state = WireGuardDirectory(path: directory + "/state")
        #expect(throws: WireGuardStateError.self) { try state.addDevice("a", endpoint: "192.0.2.1:51820\nPostUp = x") }
        #expect(throws: WireGuardStateError.self) { try state.recordEndpoint("host:0") }
        try state.recordEndpoint("[2001:db8::1]:51820")
        #expect(state.recordedEndpoint() == "[2001:db8::1]:51820")

        let linked = WireGuardDirectory(path: directory + "/linked")
        try FileManager.default.createDirectory(atPath: linked.path, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory + "/elsewhere", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: linked.devicesPath, withDestinationPath: directory + "/elsewhere")
        #expect(throws: WireGuardStateError.self) { try linked.addDevice("a", endpoint: "192.0.2.1:51820") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/elsewhere").isEmpty)

        let one = try state.addDevice("one", endpoint: "192.0.2.1:51820")
        var copy = one
        copy.name = "two"
        _ = FileManager.default.createFile(
            atPath: state.devicePath("two"), contents: Data(copy.configuration.utf8),
            attributes: [.posixPermissions: 0o600])
        let error = #expect(throws: WireGuardStateError.self) { try state.devices() }
        #expect(error?.description.contains("10.65.84.2 is one's address too") == true, "\(String(describing: error))")
    }
}
