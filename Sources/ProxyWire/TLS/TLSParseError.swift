/// Why a hello could not be decoded; `reason` names the field ("cipher_suites length 7 is odd").
struct TLSParseError: Error, Sendable, Equatable {
    let reason: String

    init(_ reason: String) { self.reason = reason }
}
