import ATSPolicy
import LogRecord
import TLSInspection

/// What a CONNECT tunnel (and intercept mode's part of it) has found and decided: the tunnel's
/// own value, written only by the tunnel. Its session folds it into the connection's log record
/// (``ConnectionRecord/fold(_:)``) when the tunnel opens for the live view and when it ends, in
/// one place, before the session writes what it knows of the end itself: no type outside
/// ``ClientSession`` writes the record.
///
/// Each field left nil leaves the record's as the session set it.
struct TunnelFindings {
    var action: Action?
    var requirements: Requirements?
    var verdict: Verdict?
    var serverNameVerdict: Verdict?
    var scheme: URLScheme?
    var serverNameIndication: String?
    var tunnelProtocol: ConnectionRecord.TunnelProtocol?
    var helloUnreadable: String?
    /// The probe behind the verdict (``ConnectionRecord/noteProbe(_:)``).
    private(set) var probe: ProbeResult?
    var deviceVersion: TLSVersion?
    var deviceCipher: CipherSuite?
    var upstreamAddress: String?
    private(set) var failure: FailureReason?
    var bytesUp: Int64 = 0
    var bytesDown: Int64 = 0
    var inspect: ConnectionRecord.InspectOutcome?
    var passthrough: PassthroughReason?
    var interceptFailed: String?
    var clientAlert: String?
    var requests: Int?
    var upstreamResumed: Bool?
    /// The app the first intercepted request's User-Agent named: the connection's, when its CONNECT
    /// named none.
    var firstRequestApp: AppAgent?

    /// Notes the probe behind the verdict.
    mutating func noteProbe(_ result: ProbeResult) { probe = result }

    /// Notes why the tunnel failed or was closed (the last reason given wins, as in the record).
    mutating func fail(_ reason: FailureReason) { failure = reason }
}

extension ConnectionRecord {
    /// Takes a tunnel's findings: each one it has replaces the record's. Folding the same findings
    /// again changes nothing, so the session may fold when the tunnel opens and when it ends.
    mutating func fold(_ findings: TunnelFindings) {
        if let action = findings.action { self.action = action }
        if let requirements = findings.requirements { self.requirements = requirements }
        if let verdict = findings.verdict { self.verdict = verdict }
        if let verdict = findings.serverNameVerdict { serverNameVerdict = verdict }
        if let scheme = findings.scheme { self.scheme = scheme }
        if let name = findings.serverNameIndication { serverNameIndication = name }
        if let kind = findings.tunnelProtocol { tunnelProtocol = kind }
        if let reason = findings.helloUnreadable { helloUnreadable = reason }
        if let probe = findings.probe { noteProbe(probe) }
        if let version = findings.deviceVersion { deviceVersion = version }
        if let cipher = findings.deviceCipher { deviceCipher = cipher }
        if let address = findings.upstreamAddress { upstreamAddress = address }
        if let failure = findings.failure { fail(failure) }
        bytesUp = findings.bytesUp
        bytesDown = findings.bytesDown
        if let inspect = findings.inspect { self.inspect = inspect }
        if let reason = findings.passthrough { passthrough = reason }
        if let failed = findings.interceptFailed { interceptFailed = failed }
        if let alert = findings.clientAlert { clientAlert = alert }
        if let requests = findings.requests { self.requests = requests }
        if let resumed = findings.upstreamResumed { upstreamResumed = resumed }
        if app == nil, let app = findings.firstRequestApp { self.app = app }
    }
}
