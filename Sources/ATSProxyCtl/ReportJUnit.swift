import ATSPolicy
import TrafficReport

/// `report --format junit`: one JUnit test case per host, failed when its traffic would fail on the
/// device (``TrafficReport/deviceFailures``), so any CI system that reads JUnit XML (the Surefire
/// format Jenkins, GitLab and GitHub's test reporters take) shows ATS beside the app's own tests.
struct ReportJUnit {
    let report: TrafficReport
    let clientClass: ClientClass
    /// ``TrafficReport/deviceFailures``, worked out once by the caller, which gates on them too.
    let deviceFailures: [DeviceFailure]

    var document: String {
        let failures = Dictionary(uniqueKeysWithValues: deviceFailures.map { ($0.host, $0) })
        // Local hosts are exempt from ATS: not a case at all.
        let hosts = report.assessments.filter { $0.disposition != .exempt }
        // A host never reached has nothing to judge: skipped, not passed.
        let skipped = hosts.filter { $0.disposition == .unreached && failures[$0.host.description] == nil }.count
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuites name=\"atsproxy\" tests=\"\(hosts.count)\" failures=\"\(failures.count)\" errors=\"0\">\n"
        xml += "  <testsuite name=\"App Transport Security (\(clientClass.rawValue))\" tests=\"\(hosts.count)\""
        xml += " failures=\"\(failures.count)\" errors=\"0\" skipped=\"\(skipped)\">\n"
        for assessment in hosts {
            let host = assessment.host.description
            let name = Self.attribute(host)
            xml += "    <testcase classname=\"ats.\(clientClass.rawValue)\" name=\"\(name)\""
            guard let failure = failures[host] else {
                if assessment.disposition == .unreached {
                    xml += ">\n      <skipped message=\"never reached: the log shows no handshake to judge\"/>\n"
                    xml += "    </testcase>\n"
                } else {
                    xml += "/>\n"
                }
                continue
            }
            xml += ">\n"
            let summary = "\(host) would fail on the device: " + failure.reasons.joined(separator: "; ")
            xml += "      <failure type=\"ats_violation\" message=\"\(Self.attribute(summary))\">"
            xml += Self.text(failure.reasons.joined(separator: "\n")) + "</failure>\n"
            xml += "    </testcase>\n"
        }
        xml += "  </testsuite>\n</testsuites>\n"
        return xml
    }

    /// Text safe inside an element: `&`, `<` and `>` escaped, and characters XML 1.0 cannot hold
    /// (controls other than tab and newline) replaced.
    static func text(_ value: String) -> String {
        escape(value) { character in
            switch character {
            case "&": "&amp;"
            case "<": "&lt;"
            case ">": "&gt;"
            default: nil
            }
        }
    }

    /// Text safe inside a double-quoted attribute: as ``text(_:)``, with quotes and line ends as
    /// references (a parser would fold a raw newline into a space).
    static func attribute(_ value: String) -> String {
        escape(value) { character in
            switch character {
            case "&": "&amp;"
            case "<": "&lt;"
            case ">": "&gt;"
            case "\"": "&quot;"
            case "\n": "&#10;"
            case "\r": "&#13;"
            case "\t": "&#9;"
            default: nil
            }
        }
    }

    private static func escape(_ value: String, _ replacement: (Unicode.Scalar) -> String?) -> String {
        var result = ""
        for scalar in value.unicodeScalars {
            if let replaced = replacement(scalar) {
                result += replaced
            } else if scalar.value < 0x20 && scalar != "\n" && scalar != "\t" || scalar.value == 0xFFFE
                || scalar.value == 0xFFFF
            {
                result += "\u{FFFD}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
