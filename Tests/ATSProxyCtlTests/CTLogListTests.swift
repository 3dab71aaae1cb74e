import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing
import TextFormats

/// `--ct-log-list`: SCTs delivered in the TLS extension, signed by two test logs, verified by OpenSSL with
/// the logs' keys from an Apple-format log list; a forged one does not count.
@Suite("CT log list: real SCTs verified", .startsProcesses(timeLimit: .seconds(60)))
struct CTLogListTests {
    static let host = "ct.example.test"

    /// An SCT (v1, x509_entry) for `leafDER` signed with `log`'s key, as a log would sign it.
    static func sct(_ factory: CertificateFactory, log: String, leafDER: [UInt8], timestamp: UInt64) throws -> [UInt8] {
        let spki = try factory.openssl(["pkey", "-in", "\(log).key", "-pubout", "-outform", "DER"])
        let logID = try factory.openssl(["dgst", "-sha256", "-binary"], input: spki)
        let time = (0..<8).reversed().map { UInt8(truncatingIfNeeded: timestamp >> (8 * UInt64($0))) }
        let length = leafDER.count
        var signed: [UInt8] = [0, 0] + time + [0, 0]
        signed += [UInt8(length >> 16), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)] + leafDER + [0, 0]
        try Data(signed).write(to: URL(fileURLWithPath: factory.path("\(log).tbs")))
        let signature = Array(try factory.openssl(["dgst", "-sha256", "-sign", "\(log).key", "\(log).tbs"]))
        return [0] + Array(logID) + time + [0, 0] + [4, 3]
            + [UInt8(signature.count >> 8), UInt8(signature.count & 0xFF)] + signature
    }

    /// A serverinfo PEM carrying `scts` in the signed_certificate_timestamp extension (type 18).
    static func serverInfo(_ scts: [[UInt8]]) -> String {
        var list: [UInt8] = []
        for sct in scts { list += [UInt8(sct.count >> 8), UInt8(sct.count & 0xFF)] + sct }
        let data = [UInt8(list.count >> 8), UInt8(list.count & 0xFF)] + list
        let ext: [UInt8] = [0, 18, UInt8(data.count >> 8), UInt8(data.count & 0xFF)] + data
        return "-----BEGIN SERVERINFO FOR CT-----\n" + Data(ext).base64EncodedString(options: .lineLength64Characters)
            + "\n-----END SERVERINFO FOR CT-----\n"
    }

    static func logList(_ factory: CertificateFactory, keys: [(log: String, key: String)]) throws -> String {
        let logs = try keys.enumerated().map { index, entry in
            let spki = try factory.openssl(["pkey", "-in", "\(entry.key).key", "-pubout", "-outform", "DER"])
            let id = try factory.openssl(["dgst", "-sha256", "-binary"], input: spki)
            return """
                {"name": "Operator \(index)", "logs": [{"description": "\(entry.log)", "log_id": "\(id.base64EncodedString())",
                  "key": "\(spki.base64EncodedString())", "state": {"usable": {"timestamp": "2020-01-01T00:00:00Z"}}}]}
                """
        }
        let path = factory.path("list-\(UUID().uuidString).json")
        try "{\"operators\": [\(logs.joined(separator: ","))]}".write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("two delivered SCTs with good signatures from two operators pass; a forged one does not count")
    func delivered() throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.certificate(
            "leaf", issuer: "root", extensions: ["subjectAltName=DNS:\(Self.host)", "extendedKeyUsage=serverAuth"])
        try factory.key("logA", "ec:P-256")
        try factory.key("logB", "ec:P-256")
        try factory.key("impostor", "ec:P-256")
        let leafDER = Array(try factory.openssl(["x509", "-in", "leaf.pem", "-outform", "DER"]))
        let now = UInt64(Date().timeIntervalSince1970 * 1000) - 60_000
        let scts = try ["logA", "logB"].map { try Self.sct(factory, log: $0, leafDER: leafDER, timestamp: now) }
        try Self.serverInfo(scts).write(toFile: factory.path("sct.pem"), atomically: true, encoding: .utf8)
        try "127.0.0.1 \(Self.host)\n".write(toFile: factory.path("hosts"), atomically: true, encoding: .utf8)
        let server = try TestTLSServer(
            directory: factory.directory,
            ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1_2", "-serverinfo", "sct.pem"])
        func diagnose(_ extra: [String]) throws -> JSONValue {
            let result = ATSProxyCtl.run(
                [
                    "diagnose", "https://\(Self.host):\(server.port)/", "--system-anchor", factory.path("root.pem"),
                    "--system-roots", "off", "--hosts-file", factory.path("hosts"), "--no-survey", "--json",
                ] + extra)
            return try JSONValue(parsing: result.standardOutput)
        }
        func defaults(_ json: JSONValue) -> [String] {
            json["tests"]?.arrayValue?.first?["violations"]?.arrayValue?.compactMap(\.stringValue) ?? []
        }
        #expect(defaults(try diagnose([])) == [], "counted: 2 delivered SCTs")
        let good = try Self.logList(factory, keys: [("Log A", "logA"), ("Log B", "logB")])
        #expect(defaults(try diagnose(["--ct-log-list", good])) == [], "verified: both signatures hold")
        // Log B's key in the list is another one: its SCT's signature fails, and one operator is left.
        let forged = try Self.logList(factory, keys: [("Log A", "logA"), ("Log B", "impostor")])
        let json = try diagnose(["--ct-log-list", forged])
        #expect(defaults(json) == ["ct"], "\(json)")
        let explanation =
            json["tests"]?.arrayValue?.first?["details"]?.arrayValue?.first?["explanation"]?.stringValue ?? ""
        #expect(explanation.contains("1 of 2 SCTs count"), "\(explanation)")
        withExtendedLifetime(server) {}
    }
}
