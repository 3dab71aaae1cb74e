import ATSPolicy
import TLSTestSupport
import Testing
import TrafficReport

/// The suggestion, loaded back as a policy, grants every fixable host exactly what its traffic
/// needs and every other judged host nothing beyond its own needs: for random days of traffic.
@Suite("The suggestion is exact: property tests")
struct SuggestionPropertyTests {
    static func day(seed: UInt64) -> [String] {
        var random = SplitMix64(state: seed)
        let labels = ["a", "b", "c", "img", "cdn", "api"]
        let parents = ["example.com", "cdn.example.com", "example.org", "img.cdn.example.com", "shop.co.uk"]
        var lines: [String] = []
        for _ in 0..<(8 + Int(random.next() % 20)) {
            let host = random.pick(labels) + "." + random.pick(parents)
            switch random.next() % 9 {
            case 0: lines.append(logLine(host, scheme: "http"))
            case 1: lines.append(logLine(host, action: "failed"))
            case 2:
                lines.append(
                    logLine(host, action: "blocked", version: "TLSv1.2", cipher: ecdheGCM, violations: ["expired"]))
            case 3: lines.append(logLine(host, version: "TLSv1.2", cipher: rsaGCM))
            default:
                lines.append(
                    logLine(host, version: random.pick(["TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"]), cipher: ecdheCBC))
            }
        }
        return lines
    }

    @Test("granted == needed for fixable hosts; nothing beyond their needs for the others", arguments: 1...200)
    func exact(seed: Int) throws {
        let report = report(Self.day(seed: UInt64(seed)))
        let document = "<plist version=\"1.0\"><dict>\(report.infoPlistFragment)</dict></plist>"
        let suggested = try PolicyLoader.load(bytes: Array(document.utf8), file: "suggested", settings: .default)
        #expect(suggested.findings.filter { $0.severity != .info }.isEmpty, "seed \(seed)")
        #expect(!suggested.allowsArbitraryLoads.isPresent)
        for assessment in report.assessments where assessment.disposition != .unreached {
            let https = suggested.requirements(for: assessment.host, scheme: .https)
            let http = suggested.requirements(for: assessment.host, scheme: .http)
            let granted = SuggestedException(
                minimumTLSVersion: https.minimumTLSVersion, disablesForwardSecrecy: !https.requiresForwardSecrecy,
                allowsInsecureHTTPLoads: http.cleartextAllowed)
            switch assessment.disposition {
            case .needsException:
                #expect(
                    granted.covers(assessment.needs) && assessment.needs.covers(granted),
                    "seed \(seed): \(assessment.host) granted \(granted.summary), needs \(assessment.needs.summary)")
            case .compliant:
                #expect(
                    granted.relaxesNothing,
                    "seed \(seed): \(assessment.host) needs nothing but is granted \(granted.summary)")
            default:
                #expect(
                    assessment.needs.covers(granted),
                    "seed \(seed): \(assessment.host) granted \(granted.summary) beyond \(assessment.needs.summary)")
            }
        }
    }
}

extension SuggestionPropertyTests {
    @Test("the random days exercise folds, refusals, unfixable and unreached hosts")
    func coverage() {
        let reports = (1...200).map { report(Self.day(seed: UInt64($0))) }
        #expect(reports.filter { !$0.folds.isEmpty }.count >= 20)
        #expect(reports.filter { !$0.refusedFolds.isEmpty }.count >= 20)
        #expect(reports.filter { !$0.unfixable.isEmpty }.count >= 100)
        #expect(reports.filter { $0.assessments.contains { $0.disposition == .unreached } }.count >= 100)
    }
}

extension SplitMix64 {
    mutating func pick<T>(_ items: [T]) -> T { items[Int(next() % UInt64(items.count))] }
}
