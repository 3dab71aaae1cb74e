internal import CPSL

/// The Public Suffix List as Debian ships it (the publicsuffix package, read by libpsl): the single
/// owner of the loaded list, which is read-only once loaded and so shared by every thread.
final class PublicSuffixList: @unchecked Sendable {
    private let raw: OpaquePointer?

    /// The newest list on the machine (`psl_latest`: the publicsuffix package's file, or the copy built
    /// into libpsl when that is newer or missing).
    static let shared = PublicSuffixList()

    private init() { raw = psl_latest(nil) }

    deinit { psl_free(raw) }

    /// Whether `domain` (lowercase, no trailing dot) is a public suffix of the list's ICANN section:
    /// `co.uk` and `com` are, `googleapis.com` (a private-section entry) and `example.com` are not. The
    /// list's implicit `*` rule does not count, so an unknown top-level label is not one.
    func isICANNSuffix(_ domain: String) -> Bool {
        guard let raw else { return false }
        return psl_is_public_suffix2(raw, domain, Int32(PSL_TYPE_ICANN | PSL_TYPE_NO_STAR_RULE)) == 1
    }

    /// The wildcard names of a certificate that stand directly over an ICANN public suffix (`*.co.uk`).
    func wildcardsOverPublicSuffix(_ dnsNames: [String]) -> Set<String> {
        Set(
            dnsNames.filter { name in
                guard name.hasPrefix("*.") else { return false }
                var suffix = name.dropFirst(2).lowercased()
                if suffix.hasSuffix(".") { suffix.removeLast() }
                return isICANNSuffix(suffix)
            })
    }
}
