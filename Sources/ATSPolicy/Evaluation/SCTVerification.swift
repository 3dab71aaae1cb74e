/// The SCTs of a connection checked against a CT log list (`--ct-log-list`): each one's signature
/// verified with its log's key, and the log's state read. Without a list the SCTs are only counted.
public struct SCTVerification: Sendable, Hashable {
    /// Where the log list came from (its file), for the verdict's words.
    public var logList: String
    public var scts: [VerifiedSCT]

    public init(logList: String, scts: [VerifiedSCT]) {
        self.logList = logList
        self.scts = scts
    }
}

/// One SCT, as the log list judges it.
public struct VerifiedSCT: Sendable, Hashable {
    public enum Source: String, Sendable, Hashable {
        case embedded
        case tlsExtension = "tls_extension"
        case ocsp
    }

    /// Where the log stood when the SCT was judged (Apple: Certificate Transparency policy, HT205280).
    public enum Approval: String, Sendable, Hashable {
        /// The log is qualified, usable or read-only: currently approved.
        case current
        /// The log is retired, and the SCT was issued before it retired: once approved.
        case once
        /// Pending, rejected, retired before the SCT, or not in the list at all.
        case none
    }

    public var source: Source
    /// The log's description from the list, or its id when the list does not know it.
    public var log: String
    /// The log's operator, when the list knows the log.
    public var logOperator: String?
    public var approval: Approval
    public var signatureValid: Bool

    public init(source: Source, log: String, logOperator: String?, approval: Approval, signatureValid: Bool) {
        self.source = source
        self.log = log
        self.logOperator = logOperator
        self.approval = approval
        self.signatureValid = signatureValid
    }

    /// Counts toward Apple's policy: a valid signature from a log once or currently approved.
    public var counts: Bool { signatureValid && approval != .none }
}
