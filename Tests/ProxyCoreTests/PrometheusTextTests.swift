import ProxyCore
import Testing

/// The text exposition writer, byte for byte: the parser-level check (prometheus_client's own
/// parser reading the daemon's output) is in MetricsProcessTests.
@Suite("Prometheus text exposition 0.0.4")
struct PrometheusTextTests {
    @Test("a counter: HELP, TYPE, one line per label set, in the order given")
    func counter() {
        var text = PrometheusText()
        text.counter(
            "demo_connections_total", help: "Connections.", [(["action": "allowed"], 3), (["action": "blocked"], 0)])
        #expect(
            text.output == """
                # HELP demo_connections_total Connections.
                # TYPE demo_connections_total counter
                demo_connections_total{action="allowed"} 3
                demo_connections_total{action="blocked"} 0

                """)
    }

    @Test("a counter or gauge without labels has no braces; a labelled family with no sample has no line")
    func unlabelled() {
        var text = PrometheusText()
        text.counter("demo_errors_total", help: "Errors.", 7)
        text.gauge("demo_open", help: "Open.", 2)
        text.counter("demo_seen_total", help: "Seen.", [])
        #expect(
            text.output == """
                # HELP demo_errors_total Errors.
                # TYPE demo_errors_total counter
                demo_errors_total 7
                # HELP demo_open Open.
                # TYPE demo_open gauge
                demo_open 2
                # HELP demo_seen_total Seen.
                # TYPE demo_seen_total counter

                """)
    }

    /// A label value, as written between its quotes.
    static let labelValues: [(value: String, written: String)] = [
        ("plain", "plain"),
        (#"back\slash"#, #"back\\slash"#),
        (#"say "hi""#, #"say \"hi\""#),
        ("two\nlines", #"two\nlines"#),
        (#"all\"of"# + "\n", #"all\\\"of\n"#),
        ("ünïcode ✓", "ünïcode ✓"),
        ("", ""),
    ]

    @Test("label values escape backslash, quote and newline, and nothing else", arguments: labelValues)
    func labelEscaping(value: String, written: String) {
        var text = PrometheusText()
        text.gauge("demo", help: "Demo.", [(["label": value], 1)])
        #expect(text.output.hasSuffix("demo{label=\"\(written)\"} 1\n"))
    }

    @Test("HELP escapes backslash and newline but leaves quotes")
    func helpEscaping() {
        var text = PrometheusText()
        text.gauge("demo", help: "A \"quoted\" \\ path\nsecond line", 1)
        #expect(text.output.hasPrefix("# HELP demo A \"quoted\" \\\\ path\\nsecond line\n# TYPE demo gauge\n"))
    }

    /// A gauge's value, as written.
    static let values: [(value: Double, written: String)] = [
        (0, "0"), (2, "2"), (-3, "-3"), (0.005, "0.005"), (2.5, "2.5"), (1_700_000_000.123, "1700000000.123"),
        (1e-9, "1e-09"), (1e20, "1e+20"), (.infinity, "+Inf"), (-.infinity, "-Inf"), (.nan, "NaN"),
    ]

    @Test("values: integers without a fraction, the format's spellings of infinities and NaN", arguments: values)
    func valueFormat(value: Double, written: String) {
        var text = PrometheusText()
        text.gauge("demo", help: "Demo.", value)
        #expect(text.output.hasSuffix("\ndemo \(written)\n"))
    }

    @Test("several labels keep their order")
    func labelOrder() {
        var text = PrometheusText()
        text.counter("demo_total", help: "Demo.", [(["b": "1", "a": "2", "c": "3"], 1)])
        #expect(text.output.hasSuffix("demo_total{b=\"1\",a=\"2\",c=\"3\"} 1\n"))
    }

    @Test("a histogram: cumulative buckets, +Inf equal to the count, sum and count")
    func histogram() {
        var snapshot = HistogramSnapshot(upperBounds: [0.005, 0.1, 1])
        for value in [0.001, 0.005, 0.05, 0.5, 0.7, 3] { snapshot.observe(value) }
        #expect(snapshot.bucketCounts == [2, 1, 2])
        #expect(snapshot.overflow == 1)
        #expect(snapshot.count == 6)
        var text = PrometheusText()
        text.histogram("demo_seconds", help: "Durations.", snapshot)
        #expect(
            text.output == """
                # HELP demo_seconds Durations.
                # TYPE demo_seconds histogram
                demo_seconds_bucket{le="0.005"} 2
                demo_seconds_bucket{le="0.1"} 3
                demo_seconds_bucket{le="1"} 5
                demo_seconds_bucket{le="+Inf"} 6
                demo_seconds_sum 4.256
                demo_seconds_count 6

                """)
    }

    @Test("an empty histogram still lists every bucket, at zero")
    func emptyHistogram() {
        var text = PrometheusText()
        text.histogram(
            "demo_seconds", help: "Durations.", HistogramSnapshot(upperBounds: DurationHistogram.probeBounds))
        let buckets = text.output.split(separator: "\n").filter { $0.hasPrefix("demo_seconds_bucket") }
        #expect(buckets.count == DurationHistogram.probeBounds.count + 1)
        #expect(buckets.allSatisfy { $0.hasSuffix(" 0") })
        #expect(buckets.first == "demo_seconds_bucket{le=\"0.005\"} 0")
        #expect(buckets.last == "demo_seconds_bucket{le=\"+Inf\"} 0")
    }

    @Test("a duration histogram counts durations in seconds")
    func durations() {
        let histogram = DurationHistogram(upperBounds: [0.01, 1])
        histogram.observe(.milliseconds(3))
        histogram.observe(.milliseconds(250))
        histogram.observe(.seconds(4))
        let snapshot = histogram.snapshot
        #expect(snapshot.bucketCounts == [1, 1])
        #expect(snapshot.overflow == 1)
        #expect(abs(snapshot.sum - 4.253) < 1e-9)
    }

    static let metricNames: [(name: String, valid: Bool)] = [
        ("atsproxy_connections_total", true), ("a:b_c", true), ("_x", true), ("X9", true),
        ("", false), ("9lives", false), ("with-dash", false), ("with space", false), ("ünï", false), ("a.b", false),
    ]

    @Test("metric names: [a-zA-Z_:][a-zA-Z0-9_:]*", arguments: metricNames)
    func metricName(name: String, valid: Bool) {
        #expect(((try? MetricName(validating: name)) != nil) == valid)
        if !valid {
            #expect(throws: PrometheusNameError(name: name, kind: .metric)) { try MetricName(validating: name) }
        }
    }

    static let labelNames: [(name: String, valid: Bool)] = [
        ("action", true), ("_x", true), ("le", true), ("status_class", true),
        ("", false), ("__reserved", false), ("a:b", false), ("1st", false), ("with-dash", false),
    ]

    @Test("label names: [a-zA-Z_][a-zA-Z0-9_]*, not __-prefixed", arguments: labelNames)
    func labelName(name: String, valid: Bool) {
        #expect(((try? LabelName(validating: name)) != nil) == valid)
        if !valid {
            #expect(throws: PrometheusNameError(name: name, kind: .label)) { try LabelName(validating: name) }
        }
    }

    @Test("the error names the rule")
    func errorText() {
        #expect(PrometheusNameError(name: "a-b", kind: .metric).description.contains("[a-zA-Z_:][a-zA-Z0-9_:]*"))
    }
}
