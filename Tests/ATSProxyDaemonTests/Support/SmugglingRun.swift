import Foundation
import TLSTestSupport
import Testing

/// One payload sent once: an entry filled for a mode, an origin interpretation and a split.
struct SmugglingJob: Sendable {
    var id: String
    var entry: SmugglingEntry
    var variant: String
    var split: SmugglingSplit
    var bytes: [UInt8]
}

/// A request the origin believes it received (origin.py's "request" event).
struct OriginRequest: Sendable {
    var connection: Int
    var variant: String
    var start: String
    var target: String
    var host: String
    var garbage: Bool
    var framing: String

    var summary: String {
        let what =
            garbage
            ? "garbage \"\(start.latin1Bytes?.escaped ?? start)\"" : "\"\(start.latin1Bytes?.escaped ?? start)\""
        return "connection \(connection): \(what), Host \"\(host.latin1Bytes?.escaped ?? host)\", framing: \(framing)"
    }
}

/// The corpus's origin (Smuggling/origin.py) in a process of its own: one listener per
/// interpretation, over TLS when given a certificate, every event in a JSON-lines file.
final class SmugglingOrigin {
    let ports: [String: UInt16]
    let recordPath: String
    private let process: Process

    init(directory: String, certificate: String? = nil, key: String? = nil) throws {
        recordPath = directory + "/origin-\(UUID().uuidString).jsonl"
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments =
            ["-u", SmugglingCorpus.path("origin.py"), recordPath] + [certificate, key].compactMap { $0 }
        ports = try ProcessLaunch.start(
            process, outputPath: recordPath + ".out", name: "the smuggling corpus's origin", timeout: 20
        ) { text -> [String: UInt16]? in
            guard text.contains("READY\n") else { return nil }
            var ports: [String: UInt16] = [:]
            for line in text.split(separator: "\n") where line.hasPrefix("PORT ") {
                let fields = line.split(separator: " ")
                if fields.count == 3, let port = UInt16(fields[2]) { ports[String(fields[1])] = port }
            }
            return ports
        }
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitForExit()
    }

    var events: [[String: Any]] {
        let text = (try? String(contentsOfFile: recordPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// Whether every connection the origin accepted has ended (and so has been read to its end).
    var isQuiet: Bool {
        let kinds = events.map { $0["event"] as? String }
        return kinds.count { $0 == "open" } == kinds.count { $0 == "close" }
    }

    var requests: [OriginRequest] {
        events.filter { $0["event"] as? String == "request" }.map {
            OriginRequest(
                connection: $0["conn"] as? Int ?? 0, variant: $0["variant"] as? String ?? "",
                start: $0["start"] as? String ?? "", target: $0["target"] as? String ?? "",
                host: $0["host"] as? String ?? "", garbage: $0["garbage"] as? Bool ?? true,
                framing: $0["framing"] as? String ?? "")
        }
    }
}

/// A job whose origin saw a request the proxy did not log as forwarded.
struct SmugglingViolation {
    var job: SmugglingJob
    var problems: [String]
    var origin: [OriginRequest]
    var logged: [[String: Any]]

    /// Intercept mode relayed the job's first request as bytes that are not HTTP (a `tls_stream`
    /// line), though the client offered ALPN `http/1.1`: the proxy must answer a first request it
    /// cannot parse with 400, 501 or 505 (issue 27, item 3).
    var relayedAsStream: Bool { logged.contains { $0.kind == "tls_stream" } }
}

/// The corpus sent through one daemon in one mode, and what the origin saw against what the
/// proxy logged (README.md in Smuggling/, "The oracle").
final class SmugglingRun {
    let mode: SmugglingMode
    private(set) var jobs: [SmugglingJob] = []
    private(set) var results: [String: [String: Any]] = [:]
    private(set) var violations: [SmugglingViolation] = []
    /// Origin requests that no job's marker or connection claims.
    private(set) var unattributed: [OriginRequest] = []
    /// Markers the proxy logged as forwarded that the origin never saw as a request: the origin
    /// read them as part of a body. Not what the oracle asserts, but a sign of disagreement.
    private(set) var unseen: [(SmugglingJob, SmugglingMarker)] = []
    private(set) var originRequestCount = 0
    /// What the origin saw, by job id.
    private(set) var originRequests: [String: [OriginRequest]] = [:]
    private(set) var forwardedCount = 0
    private(set) var seconds = 0.0

    init(mode: SmugglingMode) { self.mode = mode }

    /// Sends every entry of `entries` (the whole corpus by default) to each origin interpretation
    /// with each of its splits, through a daemon started for the purpose.
    func run(_ entries: [SmugglingEntry], workers: Int = 12, sourceLocation: SourceLocation = #_sourceLocation)
        throws
    {
        let started = Date()
        let variants = ["te", "cl"]
        var planned: [(SmugglingEntry, String, SmugglingSplit)] = []
        for entry in entries {
            for split in entry.splits {
                for variant in variants { planned.append((entry, variant, split)) }
            }
        }
        precondition(planned.count < 10_000, "job ids have four digits")
        let ids = planned.indices.map { String(format: "%04d", $0 + 1) }
        let names = [SmugglingMode.interceptHost] + (mode == .plain ? ids.map(SmugglingMode.plainHost) : [])
        let fixture = try InterceptFixture(names: names)
        let daemonFlags = ["--idle-timeout", "2", "--head-timeout", "2"]
        let origin: SmugglingOrigin
        switch mode {
        case .plain:
            try fixture.policy.write(ats: "<key>NSAllowsArbitraryLoads</key><true/>")
            origin = try SmugglingOrigin(directory: fixture.directory)
        case .intercept:
            try fixture.leaf("leaf", for: [SmugglingMode.interceptHost])
            origin = try SmugglingOrigin(
                directory: fixture.directory, certificate: fixture.factory.path("leaf.pem"),
                key: fixture.factory.path("leaf.key"))
        }
        let daemon = try fixture.daemon(intercept: mode == .intercept, daemonFlags)

        var jobList: [[String: Any]] = []
        for (index, (entry, variant, split)) in planned.enumerated() {
            let port = try #require(origin.ports[variant], sourceLocation: sourceLocation)
            let expanded = SmugglingCorpus.expand(
                entry.template + SmugglingCorpus.followUp, mode: mode, port: port, id: ids[index])
            let bytes = try #require(
                expanded, "\(entry.name): a placeholder the corpus does not define", sourceLocation: sourceLocation)
            jobs.append(SmugglingJob(id: ids[index], entry: entry, variant: variant, split: split, bytes: bytes))
            jobList.append([
                "id": ids[index],
                "connect": mode == .intercept ? "\(SmugglingMode.interceptHost):\(port)" : NSNull(),
                "writes": split.writes(bytes).map(\.latin1String),
            ])
        }
        let jobsPath = fixture.directory + "/jobs.json"
        let resultsPath = fixture.directory + "/results.json"
        try JSONSerialization.data(withJSONObject: jobList).write(to: URL(fileURLWithPath: jobsPath))
        let client = try runCommand(
            "/usr/bin/python3",
            [
                SmugglingCorpus.path("client.py"), jobsPath, resultsPath, String(daemon.port), fixture.caPEM,
                String(workers),
            ],
            timeLimit: 900, sourceLocation: sourceLocation)
        #expect(client.status == 0, "client.py: \(client.standardError)", sourceLocation: sourceLocation)
        let resultList =
            (try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: resultsPath))))
            as? [[String: Any]] ?? []
        for result in resultList { if let id = result["id"] as? String { results[id] = result } }

        // Every session has written its lines, and the origin has read every connection to its end.
        #expect(daemon.awaitNoOpenConnections(timeout: 60), sourceLocation: sourceLocation)
        #expect(
            eventually(timeout: 60) { origin.isQuiet }, "the origin still has connections open",
            sourceLocation: sourceLocation)
        compare(log: daemon.logLines(atLeast: 0), origin: origin.requests)
        #expect(daemon.terminate() == 0, sourceLocation: sourceLocation)
        // Kept for a reader of the report: the scratch directory goes with the fixture.
        for (file, kind) in [(daemon.logPath, "log"), (origin.recordPath, "origin.jsonl"), (jobsPath, "jobs.json")] {
            try? FileManager.default.removeItem(atPath: keptPath(kind))
            try? FileManager.default.copyItem(atPath: file, toPath: keptPath(kind))
        }
        seconds = Date().timeIntervalSince(started)
    }

    /// Where a file of the run is kept after it: the daemon's log, the origin's record, the jobs.
    func keptPath(_ kind: String) -> String {
        FileManager.default.temporaryDirectory.path + "/atsproxy-smuggling-\(mode.rawValue).\(kind)"
    }

    /// The oracle: each request the origin saw must match a request the proxy logged as forwarded,
    /// marker for marker, as many times as the origin saw it.
    private func compare(log: [[String: Any]], origin: [OriginRequest]) {
        let jobsByID = Dictionary(uniqueKeysWithValues: jobs.map { ($0.id, $0) })
        var forwarded: [String: [SmugglingMarker: Int]] = [:]
        var linesByID: [String: [[String: Any]]] = [:]
        var linesByPort: [Int: [[String: Any]]] = [:]
        for line in log {
            if let client = line["client"] as? String, let port = Int(client.split(separator: ":").last ?? "") {
                linesByPort[port, default: []].append(line)
            }
            guard let marker = loggedMarker(line) else { continue }
            linesByID[marker.id, default: []].append(line)
            if isForwarded(line) {
                forwarded[marker.id, default: [:]][marker, default: 0] += 1
                forwardedCount += 1
            }
        }
        originRequestCount = origin.count
        // A request with no marker belongs to the job whose markers its connection carries.
        var idsByConnection: [Int: Set<String>] = [:]
        for request in origin {
            if let marker = originMarker(request) { idsByConnection[request.connection, default: []].insert(marker.id) }
        }
        var requestsByID: [String: [OriginRequest]] = [:]
        for request in origin {
            let ids = idsByConnection[request.connection] ?? []
            if let id = originMarker(request)?.id ?? (ids.count == 1 ? ids.first : nil), jobsByID[id] != nil {
                requestsByID[id, default: []].append(request)
            } else {
                unattributed.append(request)
            }
        }
        originRequests = requestsByID
        for job in jobs {
            let requests = requestsByID[job.id] ?? []
            var problems: [String] = []
            var seen: [SmugglingMarker: Int] = [:]
            for request in requests {
                guard !request.garbage, let marker = originMarker(request) else {
                    problems.append("the origin read a request the proxy could not have logged: \(request.summary)")
                    continue
                }
                seen[marker, default: 0] += 1
            }
            let logged = forwarded[job.id] ?? [:]
            for (marker, count) in seen.sorted(by: { $0.key.description < $1.key.description })
            where count > logged[marker, default: 0] {
                problems.append(
                    "the origin saw \(marker) \(count) time(s); "
                        + "the proxy logged it as forwarded \(logged[marker, default: 0]) time(s)")
            }
            for (marker, count) in logged where count > seen[marker, default: 0] { unseen.append((job, marker)) }
            let port = results[job.id]?["client_port"] as? Int ?? -1
            let lines = (linesByID[job.id] ?? []) + (linesByPort[port] ?? []).filter { loggedMarker($0) == nil }
            if !problems.isEmpty {
                violations.append(SmugglingViolation(job: job, problems: problems, origin: requests, logged: lines))
            }
        }
    }

    /// The marker of a log line: the host of a plain request (its path is not logged), the URL of
    /// an intercepted request line.
    private func loggedMarker(_ line: [String: Any]) -> SmugglingMarker? {
        switch mode {
        case .plain: return (line["host"] as? String).flatMap(SmugglingMarker.last)
        case .intercept: return line.kind == "request" ? (line["url"] as? String).flatMap(SmugglingMarker.last) : nil
        }
    }

    /// The marker of a request the origin saw: in plain mode its Host (the proxy sets it to the
    /// target's authority, the logged host), in intercept mode its target; the other when missing.
    private func originMarker(_ request: OriginRequest) -> SmugglingMarker? {
        let host = SmugglingMarker.last(in: request.host)
        let target = SmugglingMarker.last(in: request.target)
        return mode == .plain ? host ?? target : target ?? host
    }

    /// Whether a line says the request went to the origin: not one the proxy refused itself. A
    /// body the proxy found malformed half-way (`bad request body: …`) was refused after its head
    /// went out: the origin saw that request, and the line is there for it.
    private func isForwarded(_ line: [String: Any]) -> Bool {
        let error = line["upstream_error"] as? String ?? ""
        if error.hasPrefix("bad request body") { return true }
        switch mode {
        case .plain:
            let refused: Set<String> = ["bad_request", "not_a_proxy_request", "invalid_host", "request_timeout"]
            return !refused.contains(line["failure"] as? String ?? "")
        case .intercept:
            return !error.hasPrefix("bad request") && !error.hasPrefix("request timeout")
        }
    }

    /// Jobs that did not get as far as an answer or a close: a client error (the harness failed)
    /// or 15 s of silence from the proxy.
    var stuckJobs: [(SmugglingJob, String)] {
        jobs.compactMap { job in
            let end = results[job.id]?["end"] as? String ?? "no result"
            return end == "eof" || end == "reset" ? nil : (job, end)
        }
    }

    /// One paragraph per job: the entry, the bytes, what the origin saw, what the proxy logged.
    func describe(_ violation: SmugglingViolation) -> String {
        let job = violation.job
        var text = "[\(mode.rawValue), origin \(job.variant), \(job.split.rawValue)] \(job.entry.name): "
        text += "\(job.entry.source), \(job.entry.reference)\(job.entry.link.isEmpty ? "" : " <\(job.entry.link)>")\n"
        if !job.entry.note.isEmpty { text += "  note: \(job.entry.note)\n" }
        text += "  bytes: \(job.bytes.escaped)\n"
        for problem in violation.problems { text += "  - \(problem)\n" }
        if violation.relayedAsStream {
            text += "  (the first request was relayed as a tls_stream, not read as HTTP, though the client offered "
            text += "ALPN http/1.1: a first request the proxy cannot parse must get 400, 501 or 505)\n"
        }
        text += "  the origin saw:\n"
        for request in violation.origin { text += "    \(request.summary)\n" }
        text += "  the proxy logged:\n"
        for line in violation.logged { text += "    \(Self.lineSummary(line))\n" }
        if let received = results[job.id]?["received"] as? String {
            text += "  the client got: \(received.latin1Bytes?.escaped.prefix(300) ?? "")\n"
        }
        return text
    }

    static func lineSummary(_ line: [String: Any]) -> String {
        let fields = ["method", "host", "url", "status", "failure", "upstream_error"].compactMap { key -> String? in
            guard let value = line[key], !(value is NSNull) else { return nil }
            return "\(key) \(value)"
        }
        return "\(line.kind) #\(line["connection_id"] ?? "-"): " + fields.joined(separator: ", ")
    }

    /// The whole report: counts, then every violation, stuck job and unattributed request.
    var report: String {
        var text = "atsproxy smuggling corpus, \(mode.rawValue) mode: \(jobs.count) jobs in \(Int(seconds)) s; "
        text += "the proxy logged \(forwardedCount) forwarded requests, the origin saw \(originRequestCount)\n"
        text += "\(violations.count) job(s) where the origin saw a request the proxy did not log:\n\n"
        for violation in violations { text += describe(violation) + "\n" }
        if !unattributed.isEmpty {
            text += "origin requests no job claims:\n"
            for request in unattributed { text += "  \(request.summary)\n" }
        }
        if !stuckJobs.isEmpty {
            text += "jobs that did not end with the proxy closing:\n"
            for (job, end) in stuckJobs {
                text += "  \(job.entry.name) (origin \(job.variant), \(job.split.rawValue)): \(end)\n"
            }
        }
        if !unseen.isEmpty {
            text += "requests the proxy logged as forwarded that the origin read as body bytes (not asserted):\n"
            for (job, marker) in unseen {
                text += "  \(job.entry.name) (origin \(job.variant), \(job.split.rawValue)): \(marker)\n"
            }
        }
        return text
    }
}
