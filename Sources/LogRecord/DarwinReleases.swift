/// The iOS version a User-Agent's `Darwin/x.y.z` implies: the table docs/log-format.md prints, with
/// its source.
///
/// Apple publishes no table from CFNetwork or Darwin versions to iOS releases. What a device sends
/// as `Darwin/` is its kernel's release (`uname -r`), and each iOS release's kernel is Apple's: iOS N
/// has run Darwin N+6 from iOS 7 (Darwin 13) to iOS 18 (Darwin 24), and iOS 26 runs Darwin 25 (Apple
/// renumbered iOS after 18, not Darwin). From iOS 15 (Darwin 21) on, the kernel's minor version is
/// the iOS minor version (Darwin 24.2.0 is iOS 18.2), and a later patch release with the same kernel
/// (15.7 on Darwin 21.6.0) shows as the first release that had it. iOS 14's kernels ran one minor
/// behind from 14.2 (Darwin 20.1.0 is iOS 14.2). Before iOS 14 only the major version is implied:
/// the minor versions there did not follow a rule. CFNetwork's version is logged, never used: its
/// build numbers are shared between iOS and macOS releases of a year.
///
/// A load from the iOS Simulator carries the Mac's kernel: its `ios` is the iOS release of that
/// kernel's year, not the simulated runtime's.
package enum DarwinReleases {
    /// The iOS major version of each Darwin major version that had one.
    static let iOSMajor: [Int: Int] = [
        13: 7, 14: 8, 15: 9, 16: 10, 17: 11, 18: 12, 19: 13, 20: 14, 21: 15, 22: 16, 23: 17, 24: 18, 25: 26,
    ]

    /// `24.2.0` → `18.2`; `20.1.0` → `14.2`; `19.4.0` → `13`; nil for a Darwin version no iOS release had.
    package static func iOSVersion(darwin: String) -> String? {
        let parts = darwin.split(separator: ".", omittingEmptySubsequences: false).map { Int($0) }
        guard let first = parts.first, let darwinMajor = first, let major = iOSMajor[darwinMajor] else { return nil }
        let minor = parts.count > 1 ? parts[1] : nil
        switch darwinMajor {
        case 21...:
            return minor.map { "\(major).\($0)" } ?? "\(major)"
        case 20:
            // 20.0.0 was iOS 14.0 and 14.1; from 14.2 the kernel ran one minor behind.
            return minor.map { "\(major).\($0 == 0 ? 0 : $0 + 1)" } ?? "\(major)"
        default:
            return "\(major)"
        }
    }
}
