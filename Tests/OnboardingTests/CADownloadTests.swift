import Foundation
import Onboarding
import ProxyWire
import TLSTestSupport
import Testing

/// The CA's downloads: a real CA's PEM and DER (made by openssl) served byte for byte, with the
/// types and file names iOS and browsers act on; without a CA, a 404 saying how to make one.
@Suite("CA downloads", .startsProcesses(timeLimit: .seconds(60)))
struct CADownloadTests {
    static let forms: [(path: String, type: String, filename: String)] = [
        ("/ca.mobileconfig", "application/x-apple-aspen-config", "atsproxy-ca.mobileconfig"),
        ("/ca.pem", "application/x-pem-file", "atsproxy-ca.pem"),
        ("/ca.cer", "application/pkix-cert", "atsproxy-ca.cer"),
    ]

    @Test(
        "each form is served unchanged, as an attachment of its type",
        arguments: [Fixture.arrivals[0], Fixture.arrivals[2]])
    func served(_ arrival: LocalRequest.Arrival) throws {
        let factory = try CertificateFactory()
        try factory.rootCA("atsproxy-test-ca")
        let pem = try factory.pem("atsproxy-test-ca")
        let der = Array(try factory.openssl(["x509", "-in", "atsproxy-test-ca.pem", "-outform", "DER"]))
        #expect(der.first == 0x30, "DER starts with a SEQUENCE")
        // Any bytes stand for the profile: Onboarding serves what the daemon hands it.
        let profile = Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\"><dict/></plist>\n".utf8)
        let fingerprint = String(
            decoding: try factory.openssl(["x509", "-in", "atsproxy-test-ca.pem", "-noout", "-fingerprint", "-sha256"]),
            as: UTF8.self)
        let downloads = OnboardingConfiguration.CADownloads(
            pem: pem, der: der, mobileconfig: profile,
            sha256Fingerprint: String(fingerprint.split(separator: "=").last ?? ""),
            subject: "CN=atsproxy-test-ca", notAfter: 2_000_000_000)
        let site = OnboardingSite(configuration: Fixture.configuration(authority: downloads))
        let expected: [String: [UInt8]] = ["/ca.mobileconfig": profile, "/ca.pem": pem, "/ca.cer": der]
        for form in Self.forms {
            let response = Fixture.response(site, Fixture.request(form.path, arrival: arrival))
            #expect(response.status == 200)
            #expect(response.body == expected[form.path], "\(form.path)")
            #expect(response.header("Content-Type") == form.type)
            #expect(response.header("Content-Disposition") == "attachment; filename=\"\(form.filename)\"")
            #expect(response.header("X-ATSProxy") == "onboarding")
        }
        // What was served is the CA openssl made: it reads the DER back to the same certificate.
        let path = factory.path("served.cer")
        try Data(Fixture.response(site, Fixture.request("/ca.cer")).body).write(to: URL(fileURLWithPath: path))
        let back = try factory.openssl([
            "x509", "-inform", "DER", "-in", "served.cer", "-noout", "-fingerprint", "-sha256",
        ])
        #expect(String(decoding: back, as: UTF8.self) == fingerprint)
        let page = Fixture.body(Fixture.response(site, Fixture.request("/")))
        #expect(page.contains(downloads.sha256Fingerprint.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    @Test("without a CA each form is a 404 saying how to make one", arguments: forms.map(\.path))
    func noAuthority(_ path: String) {
        let site = OnboardingSite(configuration: Fixture.configuration(authority: nil, mode: .tunnel))
        let response = Fixture.response(site, Fixture.request(path))
        #expect(response.status == 404)
        #expect(response.header("Content-Type") == "text/plain; charset=utf-8")
        #expect(response.header("Content-Disposition") == nil)
        let text = Fixture.body(response)
        #expect(text.hasPrefix("atsproxy has no CA to download at \(path).\n"))
        #expect(text.contains("atsproxyctl ca init"))
        #expect(text.contains("make run INSPECT=intercept"))
    }
}
