/// The lines of captured connections that ended before their server-name check answered
/// (``ServerNameCheck``): each is written when its check answers, with what it found, or when the
/// loop ends first (``releaseAll()``), unflagged. No line is lost to a stop. Loop-confined.
final class LinesAwaitingChecks {
    private var held: [ObjectIdentifier: ServerNameCheck] = [:]

    var count: Int { held.count }

    /// Writes `record` with `write` once `check` is done: now, when it is.
    func hold(_ record: ConnectionRecord, until check: ServerNameCheck, write: @escaping (ConnectionRecord) -> Void) {
        let key = ObjectIdentifier(check)
        held[key] = check
        check.whenDone { [weak self] mismatch in
            self?.held[key] = nil
            var record = record
            record.serverNameMismatch = mismatch
            write(record)
        }
    }

    /// The loop ends: every line held is written now, its lookup cancelled.
    func releaseAll() {
        for check in Array(held.values) { check.abandon() }
    }
}
