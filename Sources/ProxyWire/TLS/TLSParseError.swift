/// Why a hello could not be decoded; `reason` names the field ("cipher_suites length 7 is odd"),
/// `alert` is what a TLS server would answer.
struct TLSParseError: Error, Sendable, Equatable {
    let reason: String
    let alert: TLSAlertDescription

    init(_ reason: String, alert: TLSAlertDescription = .decodeError) {
        self.reason = reason
        self.alert = alert
    }
}
