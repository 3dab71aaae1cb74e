import ATSPolicy
import ATSPolicyArguments
import ArgumentParser

/// The settings of docs/ats-rules.md, "The decisions", shared by every command that reads a policy.
struct PolicyOptions: ParsableArguments {
    @Option(
        name: .customLong("os-profile"),
        help:
            "iOS behaviour to model: ios9, ios10 (10-16), ios17 (17-25), ios26, or apple-system (the OS's own services: no Info.plist exceptions)."
    )
    var osProfile: OSProfile = .ios17

    @Option(
        name: .customLong("cipher-profile"), help: "TLS 1.2 suites of the ATS client: current or documented (2016).")
    var cipherProfile: CipherProfile = .current

    @Option(
        name: .customLong("legacy-keys"), help: "NSTemporaryException*/NSThirdPartyException* keys: ignore or honor.")
    var legacyKeys: LegacyKeyHandling = .ignore

    @Option(
        name: .customLong("local-network"),
        help:
            "A CIDR range counted as local, besides loopback and link-local (repeatable); 'private' adds the RFC 1918 ranges and fc00::/7."
    )
    var localNetworks: [String] = []

    @Flag(name: .customLong("assume-app-overrides-trust"), help: "Assume the app overrides trust where ATS lets it.")
    var assumeAppOverridesTrust = false

    @Flag(name: .customLong("builtin-exceptions"), help: "Apply Apple's built-in exceptions (apple.com and others).")
    var builtinExceptions = false

    @Option(name: .customLong("ct"), help: "Certificate Transparency enforcement: apple or off.")
    var certificateTransparency: CTEnforcement = .apple

    func validate() throws {
        _ = try localNetworkRanges()
    }

    func localNetworkRanges() throws -> [AddressRange] {
        // Additive (docs/ats-rules.md, "Settings"): loopback and link-local always count as local.
        var ranges = AddressRange.defaultLocalNetworks
        for text in localNetworks {
            if text == "private" {
                ranges += AddressRange.privateNetworks
                continue
            }
            do {
                ranges.append(try AddressRange(parsing: text))
            } catch {
                throw ValidationError("--local-network \(text): \(error)")
            }
        }
        return ranges
    }

    func settings(clientClass: ClientClass = .urlsession) -> PolicySettings {
        PolicySettings(
            osProfile: osProfile, cipherProfile: cipherProfile, clientClass: clientClass, legacyKeys: legacyKeys,
            localNetworks: (try? localNetworkRanges()) ?? AddressRange.defaultLocalNetworks,
            assumeAppOverridesTrust: assumeAppOverridesTrust, builtinExceptions: builtinExceptions,
            certificateTransparency: certificateTransparency)
    }
}
