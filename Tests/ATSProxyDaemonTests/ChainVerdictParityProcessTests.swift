import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing
import TextFormats

/// The proxy and `atsproxyctl diagnose --chain` reach the same verdict for the same chain and anchors:
/// a test server presents the chain through the proxy (tunnel mode, the proxy's own probe), and
/// diagnose judges the same files with no server. Both go through ChainValidation and the same rules.
@Suite("the proxy and diagnose --chain agree", .startsProcesses(timeLimit: .seconds(120)))
struct ChainVerdictParityProcessTests {
    static let host = "api.parity.test"

    struct Case: Sendable, CustomTestStringConvertible {
        let label: String
        /// The flag the root is given with: --ca-file, --app-anchor or --system-anchor.
        let anchorFlag: String
        /// The leaf's extensions besides its name; an intermediate's, when there is one.
        let leafExtensions: [String]
        var intermediateExtensions: [String]? = nil
        var days = 90
        let expected: [String]
        var testDescription: String { label }
    }

    static let cases: [Case] = [
        Case(label: "user root, no EKU: passes", anchorFlag: "--ca-file", leafExtensions: [], expected: []),
        Case(
            label: "system anchor, no EKU and no SCTs", anchorFlag: "--system-anchor", leafExtensions: [],
            expected: ["no_serverauth_eku", "ct"]),
        Case(
            label: "app anchor, anyEKU", anchorFlag: "--app-anchor",
            leafExtensions: ["extendedKeyUsage=anyExtendedKeyUsage"],
            expected: ["no_serverauth_eku"]),
        Case(
            label: "user root, an S/MIME-only intermediate", anchorFlag: "--ca-file",
            leafExtensions: ["extendedKeyUsage=serverAuth"],
            intermediateExtensions: ["extendedKeyUsage=emailProtection"],
            expected: ["no_serverauth_eku"]),
        Case(
            label: "user root, 826 days", anchorFlag: "--ca-file", leafExtensions: ["extendedKeyUsage=serverAuth"],
            days: 826, expected: ["validity_too_long"]),
        Case(
            label: "user root, 825 days: passes", anchorFlag: "--ca-file",
            leafExtensions: ["extendedKeyUsage=serverAuth"],
            days: 825, expected: []),
    ]

    @Test("the same chain, served through the proxy and judged without a server", arguments: cases)
    func parity(_ row: Case) throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        let named = ["subjectAltName=DNS:\(Self.host)"] + row.leafExtensions
        var chainFiles = ["leaf.pem"]
        var serverArguments = ["-cert", "leaf.pem", "-key", "leaf.key"]
        if let intermediate = row.intermediateExtensions {
            try factory.certificate("inter", issuer: "root", extensions: intermediate, isCA: true)
            try factory.certificate("leaf", issuer: "inter", days: row.days, extensions: named)
            chainFiles.append("inter.pem")
            serverArguments += ["-cert_chain", "inter.pem"]
        } else {
            try factory.certificate("leaf", issuer: "root", days: row.days, extensions: named)
        }
        try "127.0.0.1 \(Self.host)\n".write(toFile: factory.path("hosts"), atomically: true, encoding: .utf8)
        let server = try TestTLSServer(directory: factory.directory, serverArguments)
        let line = try DaemonProcess.lineForOneRequest(
            directory: factory.directory,
            [
                "--listen", "127.0.0.1:0", "--system-roots", "off", row.anchorFlag, factory.path("root.pem"),
                "--hosts-file", factory.path("hosts"), "--threads", "1",
            ],
            url: "https://\(Self.host):\(server.port)/")
        let proxyViolations = line["violations"] as? [String] ?? []

        let diagnosed = ATSProxyCtl.run(
            ["diagnose", "--chain"] + chainFiles.map { factory.path($0) } + [
                "--system-roots", "off", row.anchorFlag, factory.path("root.pem"), "--json",
            ])
        let json = try JSONValue(parsing: diagnosed.standardOutput)
        let chainViolations = json["policy"]?["violations"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(proxyViolations.sorted() == row.expected.sorted(), "the proxy: \(line)")
        #expect(chainViolations.sorted() == row.expected.sorted(), "diagnose --chain: \(diagnosed.standardOutput)")
        #expect(diagnosed.exitCode == (row.expected.isEmpty ? 0 : 1))
        let proxyTrust = (line["tls"] as? [String: Any])?["trust"] as? String
        #expect(proxyTrust == json["server"]?["trust"]?.stringValue, "\(line)")
    }
}
