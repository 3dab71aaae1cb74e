/// Apple's own services, which the PAC file sends DIRECT so that the phone stays usable while it is
/// proxied: Apple's enterprise-network article (support.apple.com/101555, formerly HT210060) says
/// "Apple services will fail any connection that uses HTTPS Interception", and lists these domains.
/// They are not what a developer checks against ATS, and through an intercepting proxy activation,
/// push, the App Store, iCloud and software update would break.
///
/// Each domain covers its subdomains (matched as ``PACHostPattern`` `*.domain` is).
enum AppleServices {
    static let domains: [(domain: String, why: String)] = [
        (
            "apple.com",
            "activation (albert.), captive-portal check (captive.), push (*.push.apple.com), "
                + "software update (mesu., gdmf.), App Store (apps., itunes.), Apple ID (idmsa.), "
                + "certificate checks (ocsp., crl., valid.)"
        ),
        ("icloud.com", "iCloud, including Private Relay (mask.icloud.com, mask-h2.icloud.com)"),
        ("icloud.com.cn", "iCloud in mainland China"),
        ("icloud-content.com", "iCloud Drive, Photos and backup content"),
        ("me.com", "iCloud Mail"),
        ("apple-cloudkit.com", "CloudKit, which apps' own iCloud containers use"),
        ("apple-livephotoskit.com", "Live Photos"),
        ("mzstatic.com", "App Store and iTunes artwork and downloads"),
        ("cdn-apple.com", "software updates and other downloads"),
        ("aaplimg.com", "Apple's content delivery network"),
    ]
}
