/// Domains under which names belong to different owners, so an `NSIncludesSubdomains` entry on
/// them would reach other people's servers.
///
/// Deliberately small, not the Public Suffix List (thousands of entries and a moving target, for
/// a tool with no network access and no package dependency to spare): single labels (`com`) are
/// refused by rule, and this lists the two-label country suffixes and shared-hosting zones that
/// apps commonly meet. A parent missing here can still be folded wrongly; the report says which
/// parent it chose and why, for the reviewer to check.
enum SharedSuffixes {
    /// Second-level country registries: `example.co.uk` is a domain, `co.uk` is not.
    static let countryRegistries: Set<String> = [
        "co.uk", "org.uk", "ac.uk", "gov.uk", "me.uk", "net.uk", "ltd.uk", "plc.uk", "nhs.uk",
        "com.au", "net.au", "org.au", "edu.au", "gov.au", "co.nz", "net.nz", "org.nz", "govt.nz",
        "co.jp", "ne.jp", "or.jp", "ac.jp", "go.jp", "co.kr", "or.kr", "ac.kr", "go.kr",
        "com.cn", "net.cn", "org.cn", "gov.cn", "com.hk", "com.tw", "com.sg", "com.my", "com.ph", "com.vn",
        "co.in", "net.in", "org.in", "gov.in", "co.id", "co.th", "co.il", "co.za", "org.za",
        "com.br", "net.br", "org.br", "gov.br", "com.ar", "com.mx", "com.co", "com.pe", "com.tr", "com.ua",
        "com.eg", "com.sa", "com.pk", "com.ng",
    ]

    /// Shared hosting: every customer's name sits directly (or, for AWS, at any depth) below these.
    static let sharedZones: Set<String> = [
        "amazonaws.com", "cloudfront.net", "azurewebsites.net", "azureedge.net", "blob.core.windows.net",
        "cloudapp.net", "herokuapp.com", "appspot.com", "firebaseapp.com", "web.app", "github.io",
        "gitlab.io", "netlify.app", "vercel.app", "pages.dev", "workers.dev", "fastly.net", "akamaized.net",
        "blogspot.com", "googleusercontent.com",
    ]

    /// Whether `domain` may carry `NSIncludesSubdomains` for names of one owner: at least two labels,
    /// not a country registry, not a shared-hosting zone, and not inside Amazon's (whose regional and
    /// service labels are shared too).
    static func isOwnedDomain(_ domain: String) -> Bool {
        guard domain.split(separator: ".").count >= 2 else { return false }
        if countryRegistries.contains(domain) || sharedZones.contains(domain) { return false }
        return !domain.hasSuffix(".amazonaws.com")
    }
}
