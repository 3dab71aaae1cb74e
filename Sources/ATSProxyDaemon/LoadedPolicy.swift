import ATSPolicy
import ProxyCore
import TextFormats

/// The policy in force and where it came from: what `status` shows and a reload compares against.
struct LoadedPolicy {
    var policy: TransportSecurityPolicy
    /// The file, with its hash and parsed form; nil when the ATS defaults apply (no policy file).
    var file: PolicyLoader.Loaded?
    /// When it was loaded (milliseconds since 1970).
    var loadedAt: Int64

    static func defaults(_ policy: TransportSecurityPolicy) -> LoadedPolicy {
        LoadedPolicy(policy: policy, file: nil, loadedAt: WallClock.nowMilliseconds())
    }

    /// The policy `configuration` names, parsed with its profiles.
    static func load(_ configuration: DaemonConfiguration) throws(PolicyLoadError) -> LoadedPolicy {
        guard let file = try configuration.loadPolicyFile() else {
            return .defaults(TransportSecurityPolicy(settings: configuration.policySettings))
        }
        return LoadedPolicy(policy: file.policy, file: file, loadedAt: WallClock.nowMilliseconds())
    }

    /// How the start-up line and systemd's status name it.
    var description: String {
        guard let file else { return "the ATS defaults" }
        return "\(file.path) (sha256 \(file.sha256.prefix(12)))"
    }

    var json: JSONValue {
        .object([
            ("path", .optional(file?.path)),
            ("sha256", .optional(file?.sha256)),
            ("loaded_at", .string(DateFormat.rfc3339(milliseconds: loadedAt))),
            ("exception_domains", .int(policy.exceptions.count)),
            ("pinned_domains", .int(policy.pins.entries.count)),
            ("os_profile", .string(policy.settings.osProfile.rawValue)),
            ("cipher_profile", .string(policy.settings.cipherProfile.rawValue)),
        ])
    }
}
