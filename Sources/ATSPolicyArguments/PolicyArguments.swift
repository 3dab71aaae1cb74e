import ATSPolicy
import ArgumentParser

// The policy's setting enums as command-line values, in one place for atsproxy and atsproxyctl
// (a conformance declared twice would clash wherever both are linked).
extension OSProfile: ExpressibleByArgument {}
extension CipherProfile: ExpressibleByArgument {}
extension ClientClass: ExpressibleByArgument {}
extension LegacyKeyHandling: ExpressibleByArgument {}
extension CTEnforcement: ExpressibleByArgument {}
extension URLScheme: ExpressibleByArgument {}

/// A setting that is on or off (`--system-roots on`), shared by both executables.
package enum OnOff: String, CaseIterable, ExpressibleByArgument, Sendable {
    case on, off

    package var isOn: Bool { self == .on }
}
