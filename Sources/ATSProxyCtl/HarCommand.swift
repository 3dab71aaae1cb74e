import ATSPolicy
import ArgumentParser
import ControlProtocol
import Foundation
import LogRecord
import TextFormats
import TrafficReport

/// `atsproxyctl har LOG... [--app NAME]... [--host PATTERN]... [--client ADDRESS]... [--since TIME]`:
/// the request lines of intercept mode as a HAR 1.2 document, for a browser's network panel or any
/// HAR viewer.
struct HarCommand: ParsableCommand, OutputCommand {
    static let configuration = CommandConfiguration(
        commandName: "har",
        abstract: "Write the requests logged in intercept mode as a HAR 1.2 document.",
        discussion: """
            LOG is a JSON log of atsproxy (--log-file), plain or gzip-compressed as logrotate leaves it. Each \
            request line ("kind":"request", written with --inspect intercept) becomes an entry, sorted by \
            start; each intercepted connection becomes a page ("connection-N"). Every entry carries the \
            connection's ATS verdict as _ats, an upstream failure as _error and a protocol switch as \
            _upgrade. Headers and cookies appear only when the daemon ran with --log-headers; timings the \
            log does not record (blocked, dns, connect, ssl) are -1. Connection lines are not entries; \
            tls_stream lines (non-HTTP bytes inside the TLS) are counted on standard error.

            A line that is not valid JSON, or a request line without a member HAR needs, is skipped with a \
            warning on standard error naming file:line.

            --app, --host and --client keep the requests of one app (as its User-Agent names it, or other \
            for browsers and other agents), host or device; each may be repeated, and the kinds given must \
            all match. Each entry's _ats names its app.

            Exit status: 0 the HAR was printed (even with skipped lines, or with no entries); 2 a log is \
            missing or unreadable, --app, --host, --client or --since is malformed, or no line of the logs is \
            an atsproxy record.

            Examples:
              atsproxyctl har /var/log/atsproxy/atsproxy.log > day.har
              atsproxyctl har atsproxy.log atsproxy.log.1.gz --host '*.example.com' --since 2h > recent.har
              atsproxyctl har atsproxy.log --app MyApp --client 192.168.1.23 > myapp.har
            """)

    @Argument(help: "The proxy's JSON log files, plain or gzip (rotated ones too).")
    var logs: [String] = []

    @OptionGroup var selecting: SelectionOptions

    @Option(
        help: ArgumentHelp(
            "Only requests that started at or after TIME: RFC 3339 (2026-11-24T15:00:00Z) or a time ago (30m, 2h, 1d).",
            valueName: "time"))
    var since: String?

    func validate() throws {
        guard !logs.isEmpty else { throw ValidationError("name at least one LOG file") }
    }

    func execute(_ output: Output) -> Int32 {
        execute(output, now: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
    }

    /// - Parameter now: milliseconds since 1970, for `--since 2h`.
    func execute(_ output: Output, now: Int64) -> Int32 {
        guard let selection = selecting.selection(reportingTo: output) else { return ExitStatus.badInput }
        var start: Int64?
        if let since {
            guard let parsed = Self.since(since, now: now) else {
                output.error(
                    "atsproxyctl: error: --since: \"\(since)\" is neither an RFC 3339 time (2026-11-24T15:00:00Z) "
                        + "nor a time ago (30m, 2h, 1d)")
                return ExitStatus.badInput
            }
            start = parsed
        }
        let collection: LogCollection
        do {
            collection = try LogCollection.read(paths: logs)
        } catch {
            output.error("atsproxyctl: error: \(error)")
            return ExitStatus.badInput
        }
        // Connection lines are no entries: a damaged one is report's business, not har's.
        let skipped = collection.skipped.filter { $0.kind != "connection" }
        warnAboutSkipped(skipped, files: collection.files, to: output)
        if collection.records.isEmpty, collection.requests.isEmpty, !collection.skipped.isEmpty {
            output.error("atsproxyctl: error: none of the \(collection.skipped.count) lines read is an atsproxy record")
            return ExitStatus.badInput
        }
        let selected = collection.requests.filter { request in
            if let start, request.milliseconds < start { return false }
            return selection.matches(request)
        }
        let streams = selected.filter { $0.kind == .tlsStream }.count
        if streams > 0 {
            output.error(
                "atsproxyctl: note: \(streams) tls_stream line\(streams == 1 ? "" : "s") (bytes inside the TLS that were "
                    + "not HTTP) \(streams == 1 ? "has" : "have") no HAR entry")
        }
        if collection.requests.isEmpty {
            output.error(
                "atsproxyctl: note: the logs hold no request lines (the daemon writes them with --inspect intercept)")
        }
        output.line(HTTPArchive.document(requests: selected, creatorVersion: ATSProxyVersion.current).prettyPrinted)
        return ExitStatus.success
    }

    /// `--since`: an RFC 3339 time, or `N` followed by `s`, `m`, `h` or `d` before `now`.
    static func since(_ text: String, now: Int64) -> Int64? {
        if let time = Timestamp.milliseconds(rfc3339: text) { return time }
        guard let unit = text.last, text.count >= 2, let amount = Int64(text.dropLast()), amount >= 0 else {
            return nil
        }
        let scale: Int64
        switch unit {
        case "s": scale = 1000
        case "m": scale = 60_000
        case "h": scale = 3_600_000
        case "d": scale = 86_400_000
        default: return nil
        }
        let (span, overflow) = amount.multipliedReportingOverflow(by: scale)
        return overflow ? nil : now - span
    }
}
