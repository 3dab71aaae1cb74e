import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// The daemon's metrics as the real Prometheus client library parses them
/// (`prometheus_client.parser.text_string_to_metric_families`, in the test venv `make test-venv`
/// makes, or the Python named by ATSPROXY_TEST_PYTHON): what a scraper would see, not what our
/// own writer meant to write.
struct PrometheusScrape {
    struct Sample {
        let name: String
        let labels: [String: String]
        let value: Double
    }

    struct Family {
        let name: String
        let type: String
        let help: String
        let samples: [Sample]
    }

    let text: String
    let families: [Family]

    /// The test venv's Python: ATSPROXY_TEST_PYTHON, else `.build/test-venv/bin/python3` in the package.
    static var python: String {
        ProcessInfo.processInfo.environment["ATSPROXY_TEST_PYTHON"] ?? Repository.path(".build/test-venv/bin/python3")
    }

    /// Reads every family and sample back out through the parser, as JSON.
    static let parserScript = """
        import json, sys
        from prometheus_client.parser import text_string_to_metric_families
        out = []
        for family in text_string_to_metric_families(sys.stdin.read()):
            out.append({"name": family.name, "type": family.type, "help": family.documentation,
                        "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in family.samples]})
        print(json.dumps(out))
        """

    /// Parses `text`; throws when the parser refuses it (its error is the message).
    init(parsing text: String) throws {
        self.text = text
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            throw FixtureError(message: "no Python at \(Self.python): run make test-venv (or set ATSPROXY_TEST_PYTHON)")
        }
        let result = try runCommand(Self.python, ["-c", Self.parserScript], input: Data(text.utf8))
        guard result.status == 0 else {
            throw FixtureError(message: "prometheus_client refused the text: \(result.standardError)")
        }
        let decoded = try JSONSerialization.jsonObject(with: result.standardOutputBytes) as? [[String: Any]] ?? []
        families = decoded.map { family in
            Family(
                name: family["name"] as? String ?? "", type: family["type"] as? String ?? "",
                help: family["help"] as? String ?? "",
                samples: (family["samples"] as? [[String: Any]] ?? []).map {
                    Sample(
                        name: $0["name"] as? String ?? "", labels: $0["labels"] as? [String: String] ?? [:],
                        value: ($0["value"] as? NSNumber)?.doubleValue ?? .nan)
                })
        }
    }

    /// Reads the daemon's metrics through its control socket and parses them.
    init(socket: String) throws {
        let answer = atsproxyctl("metrics", "--socket", socket, "--json")
        let object = try #require(
            jsonObject(answer.standardOutput), "not JSON: \(answer.standardOutput) \(answer.standardError)")
        #expect(object["ok"] as? Bool == true && object["command"] as? String == "metrics")
        try self.init(parsing: try #require(object["text"] as? String))
    }

    /// Every sample named `name` (a counter's carry `_total`, a histogram's `_bucket`, `_sum`, `_count`).
    func samples(_ name: String) -> [Sample] { families.flatMap(\.samples).filter { $0.name == name } }

    /// The one sample named `name` whose labels include `labels`; nil when there is none.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        let matching = samples(name).filter { sample in labels.allSatisfy { sample.labels[$0.key] == $0.value } }
        return matching.count == 1 ? matching[0].value : nil
    }

    /// The family whose samples include `name`.
    func family(of name: String) -> Family? {
        families.first { $0.samples.contains { $0.name == name } || $0.name == name }
    }
}
