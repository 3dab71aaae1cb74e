import ATSPolicy

/// The policy the daemon judges with, as the live view needs it to word its suggestion: the same
/// inputs `atsproxyctl report --policy` takes. The daemon gives a new one when it reloads.
package struct LivePolicyContext: Sendable {
    /// The daemon's policy: the live view lists its exceptions the traffic never needed.
    package var policy: TransportSecurityPolicy
    /// The settings the daemon runs with (OS and cipher profile, local networks, …): the suggestion is for them.
    package var settings: PolicySettings
    /// Which API the traffic stands for (the daemon's `--client`).
    package var clientClass: ClientClass
    /// Where the policy came from, shown on the page: `config/ats-defaults.plist (sha256 3f1c…)`.
    package var description: String

    package init(
        policy: TransportSecurityPolicy, settings: PolicySettings, clientClass: ClientClass, description: String
    ) {
        self.policy = policy
        self.settings = settings
        self.clientClass = clientClass
        self.description = description
    }
}
