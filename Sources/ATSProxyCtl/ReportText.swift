import ATSPolicy
import TrafficReport

/// `report`'s text: the per-host table, the Info.plist fragment to paste, then why subdomains were
/// folded, the exempt and unfixable hosts and, with --policy, what is unused and what is missing.
struct ReportText {
    let report: TrafficReport
    let collection: LogCollection
    let policyPath: String?

    func write(to output: Output) {
        writeSummary(to: output)
        output.line()
        writeTable(to: output)
        output.line()
        if report.entries.isEmpty {
            output.line(
                "Suggested NSAppTransportSecurity: none needed; every fixable host passes with the ATS defaults.")
        } else {
            output.line("Suggested NSAppTransportSecurity (paste inside the top-level <dict> of Info.plist):")
            output.write(report.infoPlistFragment)
        }
        writeSubdomains(to: output)
        if !report.exempt.isEmpty {
            output.line()
            output.line(
                "Exempt from ATS as local hosts (no key needed): "
                    + report.exempt.map(\.host.description).joined(separator: ", "))
        }
        if !report.unfixable.isEmpty {
            output.line()
            output.line("Not fixable by any ATS key (no entry suggested):")
            for assessment in report.unfixable {
                for blocker in assessment.blockers {
                    output.line("  \(assessment.host) (\(blocker.violation)): \(blocker.reason)")
                }
                if !assessment.needs.relaxesNothing {
                    output.line("    once that is fixed, it also needs \(assessment.needs.summary)")
                }
            }
        }
        writeUnreadableHellos(to: output)
        if let policyPath, let unused = report.unused, let missing = report.missing {
            writeComparison(policyPath, unused: unused, missing: missing, to: output)
        }
    }

    private func writeSummary(to output: Output) {
        let files = collection.files
        let compressed = files.filter(\.wasCompressed).count
        var line = "\(files.count) log file\(files.count == 1 ? "" : "s")"
        if compressed > 0 { line += " (\(compressed) compressed)" }
        line += ", \(collection.records.count) connection\(collection.records.count == 1 ? "" : "s"), "
        let requests = report.assessments.map(\.traffic.requests).reduce(0, +)
        if collection.hasRequests { line += "\(requests) request\(requests == 1 ? "" : "s"), " }
        line += "\(report.assessments.count) host\(report.assessments.count == 1 ? "" : "s")"
        if !collection.skipped.isEmpty {
            line +=
                "; \(collection.skipped.count) line\(collection.skipped.count == 1 ? "" : "s") skipped (see the warnings)"
        }
        output.line(line)
    }

    private func writeTable(to output: Output) {
        // REQ (the HTTP requests inside intercepted connections) only when the logs hold request
        // lines: a tunnel-mode log has none, and its table stays as it was.
        let showsRequests = collection.hasRequests
        var header = ["HOST", "CONN"]
        if showsRequests { header.append("REQ") }
        header += ["ALLOWED", "BLOCKED", "FAILED", "VIOLATIONS", "NEEDS"]
        var rows: [[String]] = [header]
        for assessment in report.assessments {
            let traffic = assessment.traffic
            var row = [traffic.host.description, String(traffic.connections)]
            if showsRequests { row.append(String(traffic.requests)) }
            row += [String(traffic.allowed), String(traffic.blocked), String(traffic.failed)]
            row.append(traffic.violationNames.isEmpty ? "-" : traffic.violationNames.joined(separator: ","))
            row.append(needs(assessment))
            rows.append(row)
        }
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        // Counts right-aligned, text left-aligned; the last column is not padded.
        let numeric = Set(1...(showsRequests ? 5 : 4))
        for row in rows {
            let cells = row.indices.map { column -> String in
                let padding = String(repeating: " ", count: widths[column] - row[column].count)
                if column == row.count - 1 { return row[column] }
                return numeric.contains(column) ? padding + row[column] : row[column] + padding
            }
            output.line(cells.joined(separator: "  "))
        }
    }

    /// The NEEDS column: the relaxations in short, and the entry that carries them when folded.
    private func needs(_ assessment: HostAssessment) -> String {
        switch assessment.disposition {
        case .compliant: return "nothing"
        case .exempt: return "nothing (local host, exempt)"
        case .unfixable: return "not fixable (below)"
        case .unreached: return "unknown (never reached)"
        case .needsException:
            var parts: [String] = []
            if assessment.needs.allowsInsecureHTTPLoads { parts.append("http://") }
            if let floor = assessment.needs.minimumTLSVersion { parts.append("\(floor.plistName) floor") }
            if assessment.needs.disablesForwardSecrecy { parts.append("no forward secrecy") }
            var text = parts.joined(separator: ", ")
            if let key = report.entryKey[assessment.host], key != assessment.host.description {
                text += " (via \(key))"
            }
            return text
        }
    }

    /// Hosts some of whose tunnels carried a ClientHello the proxy could not read: a client fault
    /// (or an attempt to slip past the proxy) that no Info.plist key changes.
    private func writeUnreadableHellos(to output: Output) {
        let hosts = report.assessments.map(\.traffic).filter { $0.unreadableHellos > 0 }
        guard !hosts.isEmpty else { return }
        output.line()
        output.line("ClientHellos the proxy could not read (blocked in enforce mode; no ATS key involved):")
        for traffic in hosts {
            let count = traffic.unreadableHellos
            output.line(
                "  \(traffic.host): \(count) connection\(count == 1 ? "" : "s"), first: \(traffic.firstUnreadableHello ?? "?")"
            )
        }
    }

    private func writeSubdomains(to output: Output) {
        guard !report.folds.isEmpty || !report.refusedFolds.isEmpty else { return }
        output.line()
        output.line("NSIncludesSubdomains:")
        for fold in report.folds { output.line("  \(fold.domain): \(fold.reason)") }
        for refused in report.refusedFolds { output.line("  not at \(refused.domain): \(refused.reason)") }
    }

    private func writeComparison(_ policyPath: String, unused: [UnusedKey], missing: [MissingKey], to output: Output) {
        output.line()
        if unused.isEmpty {
            output.line("Unused in \(policyPath): nothing; every exception was needed.")
        } else {
            output.line("Unused in \(policyPath):")
            for key in unused {
                let value = key.value.map { " = \($0)" } ?? ""
                switch key.advice {
                case .delete: output.line("  delete  \(key.path)\(value): \(key.reason)")
                case .raise: output.line("  raise   \(key.path)\(value) to \(key.replacement ?? "?"): \(key.reason)")
                case .replace: output.line("  replace \(key.path)\(value) by the suggested entries: \(key.reason)")
                }
            }
        }
        output.line()
        if missing.isEmpty {
            output.line("Missing from \(policyPath): nothing; it lets every fixable host through.")
        } else {
            output.line("Missing from \(policyPath):")
            for key in missing { output.line("  add     \(key.path) = \(key.value): \(key.reason)") }
        }
    }
}
