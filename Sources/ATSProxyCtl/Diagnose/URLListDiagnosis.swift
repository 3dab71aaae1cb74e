import ATSPolicy
import Dispatch
import POSIX
import ProxyCore
import TLSInspection
import TextFormats

/// `diagnose --urls FILE`: every URL of a list diagnosed, a bounded number at a time, into one table
/// or one JSON document, with the exit status of the worst: an administrator's audit of the MDM and
/// update endpoints a fleet depends on, or a team's of every host its app reaches.
struct URLListDiagnosis {
    /// One line of the list, diagnosed.
    struct Row: Sendable {
        var line: Int
        var url: String
        /// diagnose's own exit status for this URL: 0 the defaults pass, 1 findings, 2 a bad URL, 3 unreachable.
        var status: Int32
        /// PASS, FAIL, BAD URL or UNREACHABLE.
        var result: String
        var violations: [String]
        /// The conclusion in one sentence, or the error.
        var summary: String
        /// diagnose --json's document for the URL, or `{url, line, error}`.
        var json: JSONValue
    }

    var rows: [Row]

    /// The worst status of any row (0 for an empty list).
    var status: Int32 { rows.map(\.status).max() ?? ExitStatus.success }

    /// The URLs of `text`: one a line; blank lines and `#` comments skipped.
    static func entries(_ text: String) -> [(line: Int, url: String)] {
        text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { index, raw in
            let line = raw.trimmingWhitespace
            guard !line.isEmpty, !line.hasPrefix("#") else { return nil }
            return (index + 1, line)
        }
    }

    /// Diagnoses each entry, `jobs` at a time: each job a thread with a probe loop of its own
    /// (the loop's probes are the proxy's), sharing `service`'s TLS contexts.
    static func run(
        _ entries: [(line: Int, url: String)], source: String, jobs: Int, cleartext: Bool, surveying: Bool,
        settings: PolicySettings, service: ProbeService, limits: ProbeLimits
    ) -> URLListDiagnosis {
        let results = Locked([Row?](repeating: nil, count: entries.count))
        let next = Locked(0)
        let group = DispatchGroup()
        let work = entries
        for _ in 0..<max(1, min(jobs, entries.count)) {
            DispatchQueue.global().async(group: group) {
                // Made and used on this job's thread only.
                let probes = Result { () throws(ProbeFailure) in
                    try ProbeLoop.starting(service: service, limits: limits)
                }
                while true {
                    let index = next.withLock { value -> Int in
                        defer { value += 1 }
                        return value
                    }
                    guard index < work.count else { return }
                    let row = diagnose(
                        work[index], source: source, cleartext: cleartext, surveying: surveying, settings: settings,
                        probes: probes)
                    results.withLock { $0[index] = row }
                }
            }
        }
        group.wait()
        return URLListDiagnosis(rows: results.withLock { $0.compactMap(\.self) })
    }

    private static func diagnose(
        _ entry: (line: Int, url: String), source: String, cleartext: Bool, surveying: Bool, settings: PolicySettings,
        probes: Result<ProbeLoop, ProbeFailure>
    ) -> Row {
        func failed(_ status: Int32, _ result: String, _ message: String) -> Row {
            Row(
                line: entry.line, url: entry.url, status: status, result: result, violations: [], summary: message,
                json: .object([
                    ("url", .string(entry.url)), ("line", .int(entry.line)), ("error", .string(message)),
                ]))
        }
        let target: DiagnoseTarget
        do {
            target = try DiagnoseTarget(entry.url, cleartext: cleartext)
        } catch {
            return failed(ExitStatus.badInput, "BAD URL", "\(source):\(entry.line): \(error)")
        }
        let diagnosis: Diagnosis
        do {
            diagnosis = try Diagnosis.run(target, settings: settings, probes: probes.get(), surveying: surveying)
        } catch {
            return failed(ExitStatus.unreachable, "UNREACHABLE", "\(target.url): \(error)")
        }
        let defaults = diagnosis.results.first { if case .defaults = $0.test.role { true } else { false } }
        let passed = diagnosis.conclusion.kind == .defaultsPass
        var json = diagnosis.json
        if case .object(var fields) = json {
            fields.insert(("line", .int(entry.line)), at: 0)
            json = .object(fields)
        }
        return Row(
            line: entry.line, url: entry.url, status: passed ? ExitStatus.success : ExitStatus.findings,
            result: passed ? "PASS" : "FAIL",
            violations: (defaults?.verdict?.violations.map(\.kind.name) ?? [])
                + (defaults?.load?.refusedRedirect?.verdict?.violations.map(\.kind.name) ?? []),
            summary: diagnosis.conclusion.headline, json: json)
    }

    /// `{"urls": [...], "passed": n, "failed": n, "errors": n, "exit_status": worst}`.
    var json: JSONValue {
        .object([
            ("urls", .array(rows.map(\.json))),
            ("passed", .int(rows.count { $0.status == ExitStatus.success })),
            ("failed", .int(rows.count { $0.status == ExitStatus.findings })),
            ("errors", .int(rows.count { $0.status > ExitStatus.findings })),
            ("exit_status", .int(Int(status))),
        ])
    }

    /// One table: result, URL, the defaults' violations, and the conclusion.
    func write(to output: Output) {
        let width = min(60, rows.map(\.url.count).max() ?? 3)
        output.line("RESULT       " + "URL".padding(to: width) + "  VIOLATIONS / CONCLUSION")
        for row in rows {
            let violations = row.violations.isEmpty ? "" : row.violations.joined(separator: ",") + ": "
            output.line(
                row.result.padding(to: 11) + "  " + row.url.padding(to: width) + "  " + violations + row.summary)
        }
        let passed = rows.count { $0.status == ExitStatus.success }
        output.line()
        output.line(
            "\(passed) of \(rows.count) URL\(rows.count == 1 ? "" : "s") pass with the ATS defaults; "
                + "\(rows.count { $0.status == ExitStatus.findings }) need something, "
                + "\(rows.count { $0.status > ExitStatus.findings }) could not be diagnosed.")
    }
}

extension Substring {
    fileprivate var trimmingWhitespace: String {
        String(
            drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }
                .reversed())
    }
}
