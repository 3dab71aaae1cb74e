import ATSPolicy
import TextFormats

/// The report as one JSON object: `{"hosts", "suggested", "unfixable", "unused", "missing", …}`.
extension TrafficReport {
    /// - Parameters:
    ///   - collection: the logs read, for the `files` and `skipped` fields.
    ///   - policyPath: the `--policy` file compared with, or nil.
    package func json(collection: LogCollection, policyPath: String?) -> JSONValue {
        .object([
            ("policy", .optional(policyPath)),
            ("files", .array(collection.files.map(Self.json))),
            ("skipped", .array(collection.skipped.map(Self.json))),
            ("hosts", .array(assessments.map(hostJSON))),
            ("suggested", .object([(ATSKey.appTransportSecurity, suggestedATS.json)])),
            ("subdomains", .array(folds.map(Self.json))),
            (
                "not_folded",
                .array(refusedFolds.map { .object([("domain", .string($0.domain)), ("reason", .string($0.reason))]) })
            ),
            ("exempt", .strings(exempt.map(\.host.description))),
            ("unfixable", .array(unfixable.map(Self.unfixableJSON))),
            ("unused", .array((unused ?? []).map(Self.json))),
            ("missing", .array((missing ?? []).map(Self.json))),
        ])
    }

    private func hostJSON(_ assessment: HostAssessment) -> JSONValue {
        let traffic = assessment.traffic
        return .object([
            ("host", .string(traffic.host.description)),
            ("connections", .int(traffic.connections)),
            ("requests", .int(traffic.requests)),
            ("allowed", .int(traffic.allowed)),
            ("blocked", .int(traffic.blocked)),
            ("failed", .int(traffic.failed)),
            ("as_server_name", .int(traffic.asServerName)),
            ("ports", .array(traffic.ports.sorted().map { .int($0) })),
            ("cleartext", .bool(traffic.cleartextSeen)),
            ("unreadable_hellos", .int(traffic.unreadableHellos)),
            (
                "tls_versions",
                .object(traffic.versions.sorted { $0.key < $1.key }.map { ($0.key.plistName, .int($0.value)) })
            ),
            ("ciphers", .object(traffic.suites.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
            ("violations", .strings(traffic.violationNames)),
            ("status", .string(assessment.disposition.rawValue)),
            ("needs", assessment.needs.json),
            ("reasons", .strings(assessment.reasons)),
            ("entry", .optional(entryKey[traffic.host])),
            ("first_seen", .optional(traffic.firstSeen)),
            ("last_seen", .optional(traffic.lastSeen)),
        ])
    }

    private static func unfixableJSON(_ assessment: HostAssessment) -> JSONValue {
        .object([
            ("host", .string(assessment.host.description)),
            ("violations", .strings(assessment.blockers.map(\.violation))),
            ("reasons", .strings(assessment.blockers.map(\.reason))),
            // What it would need on top, once the server is fixed.
            ("needs", assessment.needs.json),
        ])
    }

    private static func json(_ file: LogCollection.FileSummary) -> JSONValue {
        .object([
            ("path", .string(file.path)), ("compressed", .bool(file.wasCompressed)), ("records", .int(file.records)),
            ("damage", .optional(file.damage)),
        ])
    }

    private static func json(_ line: LogCollection.SkippedLine) -> JSONValue {
        .object([
            ("path", .string(line.path)), ("line", .int(line.line)), ("column", line.column.map { .int($0) } ?? .null),
            ("reason", .string(line.reason)),
        ])
    }

    private static func json(_ fold: SubdomainFold) -> JSONValue {
        .object([
            ("domain", .string(fold.domain)), ("hosts", .strings(fold.hosts)), ("kept_apart", .strings(fold.keptApart)),
            ("reason", .string(fold.reason)),
        ])
    }

    private static func json(_ key: UnusedKey) -> JSONValue {
        .object([
            ("path", .string(key.path)), ("value", .optional(key.value)), ("action", .string(key.advice.rawValue)),
            ("replacement", .optional(key.replacement)), ("reason", .string(key.reason)),
        ])
    }

    private static func json(_ key: MissingKey) -> JSONValue {
        .object([
            ("host", .string(key.host)), ("path", .string(key.path)), ("value", .string(key.value)),
            ("reason", .string(key.reason)),
        ])
    }
}
