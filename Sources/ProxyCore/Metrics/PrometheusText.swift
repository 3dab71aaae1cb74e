/// Writes Prometheus's text exposition format 0.0.4 (what `GET /metrics` answers, served as
/// `text/plain; version=0.0.4; charset=utf-8`): one `# HELP` and one `# TYPE` line per family, then
/// its samples.
///
/// Names are typed (``MetricName``, ``LabelName``) and validated when made; label values may hold
/// anything and are escaped here. A family is written whole by one call, so its samples are never
/// split by another family's, which the format requires.
///
///     var text = PrometheusText()
///     text.counter("atsproxy_connections_total", help: "Logged connections, by action.",
///                  [(["action": "allowed"], 3), (["action": "blocked"], 1)])
///     text.gauge("atsproxy_connections_open", help: "Client connections open now.", 2)
///     let body = text.output
package struct PrometheusText: Sendable {
    /// The exposition so far.
    package private(set) var output = ""
    private var written: Set<String> = []

    /// The `Content-Type` a `/metrics` answer carries.
    package static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    package init() {}

    /// A counter family: each sample is a count since the process started, by its labels.
    ///
    /// - Precondition: `name` ends in `_total` and was not written before.
    package mutating func counter(_ name: MetricName, help: String, _ samples: [(Labels, Int)]) {
        precondition(name.description.hasSuffix("_total"), "a counter's name ends in _total: \(name)")
        family(name, type: "counter", help: help)
        for (labels, value) in samples { line(name.description, labels, Self.format(value)) }
    }

    /// A counter without labels.
    package mutating func counter(_ name: MetricName, help: String, _ value: Int) {
        counter(name, help: help, [(Labels([]), value)])
    }

    /// A gauge family: each sample is a value now, by its labels.
    ///
    /// - Precondition: `name` was not written before.
    package mutating func gauge(_ name: MetricName, help: String, _ samples: [(Labels, Double)]) {
        family(name, type: "gauge", help: help)
        for (labels, value) in samples { line(name.description, labels, Self.format(value)) }
    }

    /// A gauge without labels.
    package mutating func gauge(_ name: MetricName, help: String, _ value: Double) {
        gauge(name, help: help, [(Labels([]), value)])
    }

    /// A histogram family without labels: `name_bucket{le="…"}` for each bound, cumulative, then
    /// `le="+Inf"`, `name_sum` and `name_count`.
    ///
    /// - Precondition: `name` does not end in `_bucket`, `_sum` or `_count` and was not written before.
    package mutating func histogram(_ name: MetricName, help: String, _ histogram: HistogramSnapshot) {
        let base = name.description
        precondition(
            !["_bucket", "_sum", "_count"].contains { base.hasSuffix($0) },
            "a histogram's own name has no sample suffix: \(name)")
        family(name, type: "histogram", help: help)
        var cumulative = 0
        for (bound, count) in zip(histogram.upperBounds, histogram.bucketCounts) {
            cumulative += count
            line(base + "_bucket", ["le": Self.format(bound)], Self.format(cumulative))
        }
        line(base + "_bucket", ["le": "+Inf"], Self.format(histogram.count))
        line(base + "_sum", [:], Self.format(histogram.sum))
        line(base + "_count", [:], Self.format(histogram.count))
    }

    private mutating func family(_ name: MetricName, type: String, help: String) {
        precondition(written.insert(name.description).inserted, "the family \(name) is written twice")
        output += "# HELP \(name) \(Self.escape(help, quote: false))\n# TYPE \(name) \(type)\n"
    }

    private mutating func line(_ name: String, _ labels: Labels, _ value: String) {
        output += name
        if !labels.pairs.isEmpty {
            output += "{"
            output += labels.pairs.map { "\($0.name)=\"\(Self.escape($0.value, quote: true))\"" }.joined(separator: ",")
            output += "}"
        }
        output += " \(value)\n"
    }

    /// Escapes a label value (`\`, `"`, newline) or a HELP text (`\` and newline only: the format
    /// leaves quotes in HELP as they are).
    static func escape(_ text: String, quote: Bool) -> String {
        guard text.contains(where: { $0 == "\\" || $0 == "\n" || (quote && $0 == "\"") }) else { return text }
        var escaped = ""
        for character in text {
            switch character {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\"" where quote: escaped += "\\\""
            default: escaped.append(character)
            }
        }
        return escaped
    }

    static func format(_ value: Int) -> String { String(value) }

    /// A sample value as the format spells it: `+Inf`, `-Inf`, `NaN`, integers without a fraction
    /// (bucket bounds read `1`, not `1.0`), others as Swift's shortest exact form (`0.005`, `1e-09`).
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}

/// A metric family's name: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
package struct MetricName: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    package let description: String

    /// - Throws: when `name` is not a valid metric name.
    package init(validating name: String) throws(PrometheusNameError) {
        guard Self.isValid(name) else { throw PrometheusNameError(name: name, kind: .metric) }
        description = name
    }

    /// A name written in the program: an invalid one is a bug, stopped at the first use.
    package init(stringLiteral name: String) {
        guard Self.isValid(name) else { preconditionFailure("not a Prometheus metric name: \(name)") }
        description = name
    }

    static func isValid(_ name: String) -> Bool {
        guard let first = name.utf8.first, !isDigit(first) else { return false }
        return name.utf8.allSatisfy {
            isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ":")
        }
    }
}

/// A label's name: `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__` (reserved for Prometheus itself).
package struct LabelName: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    package let description: String

    /// - Throws: when `name` is not a valid label name.
    package init(validating name: String) throws(PrometheusNameError) {
        guard Self.isValid(name) else { throw PrometheusNameError(name: name, kind: .label) }
        description = name
    }

    /// A name written in the program: an invalid one is a bug, stopped at the first use.
    package init(stringLiteral name: String) {
        guard Self.isValid(name) else { preconditionFailure("not a Prometheus label name: \(name)") }
        description = name
    }

    static func isValid(_ name: String) -> Bool {
        guard let first = name.utf8.first, !isDigit(first), !name.hasPrefix("__") else { return false }
        return name.utf8.allSatisfy { isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "_") }
    }
}

private func isLetter(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
}

private func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

/// A sample's labels, in the order written: `["action": "allowed", "status_class": "2xx"]`.
package struct Labels: Sendable, ExpressibleByDictionaryLiteral {
    package let pairs: [(name: LabelName, value: String)]

    /// - Precondition: no name repeats.
    package init(_ pairs: [(name: LabelName, value: String)]) {
        precondition(Set(pairs.map(\.name)).count == pairs.count, "a label name repeats")
        self.pairs = pairs
    }

    package init(dictionaryLiteral elements: (LabelName, String)...) {
        self.init(elements.map { (name: $0.0, value: $0.1) })
    }
}

/// Why a name is not one Prometheus accepts.
package struct PrometheusNameError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Kind: String, Sendable { case metric, label }

    package var name: String
    package var kind: Kind

    package init(name: String, kind: Kind) {
        self.name = name
        self.kind = kind
    }

    package var description: String {
        switch kind {
        case .metric: "\(String(reflecting: name)) is not a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)"
        case .label: "\(String(reflecting: name)) is not a label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)"
        }
    }
}
