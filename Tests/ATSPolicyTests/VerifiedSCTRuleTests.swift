import ATSPolicy
import Testing
import TextFormats

/// Apple's CT policy with the SCTs verified against a log list (HT205280): valid signatures from once- or
/// currently-approved logs of two operators, and the delivered or embedded count (docs/ats-rules.md).
@Suite("CT with a log list: verified SCTs")
struct VerifiedSCTRuleTests: ATSSpecFixture {
    static func sct(
        _ source: VerifiedSCT.Source = .embedded, log: String, op: String, _ approval: VerifiedSCT.Approval = .current,
        valid: Bool = true
    ) -> VerifiedSCT {
        VerifiedSCT(source: source, log: log, logOperator: op, approval: approval, signatureValid: valid)
    }

    struct Row: ATSSpecRow {
        let label: String
        let lifetimeDays: Int64
        let scts: [VerifiedSCT]
        let fails: Bool
    }

    static let rows: [Row] = [
        Row(
            label: "2 embedded, 2 operators, 90 days", lifetimeDays: 90,
            scts: [sct(log: "a1", op: "A"), sct(log: "b1", op: "B")], fails: false),
        Row(
            label: "2 embedded, one operator", lifetimeDays: 90,
            scts: [sct(log: "a1", op: "A"), sct(log: "a2", op: "A")], fails: true),
        Row(
            label: "2 embedded, one signature bad", lifetimeDays: 90,
            scts: [sct(log: "a1", op: "A"), sct(log: "b1", op: "B", valid: false)], fails: true),
        Row(
            label: "2 embedded, one log rejected", lifetimeDays: 90,
            scts: [sct(log: "a1", op: "A"), sct(log: "b1", op: "B", .none)], fails: true),
        Row(
            label: "2 embedded, one from a log retired after the SCT (once approved)", lifetimeDays: 90,
            scts: [sct(log: "a1", op: "A"), sct(log: "b1", op: "B", .once)], fails: false),
        Row(
            label: "2 embedded, both once approved: none from a current log", lifetimeDays: 90,
            scts: [sct(log: "a1", op: "A", .once), sct(log: "b1", op: "B", .once)], fails: true),
        Row(
            label: "2 embedded for a 200-day leaf (needs 3)", lifetimeDays: 200,
            scts: [sct(log: "a1", op: "A"), sct(log: "b1", op: "B")], fails: true),
        Row(
            label: "2 current, one delivered in the handshake, 200 days", lifetimeDays: 200,
            scts: [sct(.tlsExtension, log: "a1", op: "A"), sct(log: "b1", op: "B")], fails: false),
        Row(
            label: "2 delivered by OCSP from 2 operators", lifetimeDays: 200,
            scts: [sct(.ocsp, log: "a1", op: "A"), sct(.ocsp, log: "b1", op: "B")], fails: false),
        Row(
            label: "nothing counts: forged signatures", lifetimeDays: 90,
            scts: [sct(log: "a1", op: "A", valid: false), sct(log: "b1", op: "B", valid: false)], fails: true),
    ]

    @Test("the verified policy", arguments: rows)
    func verified(row: Row) throws {
        let notBefore = ATSSpec.now - 10 * ATSSpec.day
        var observed = connection(
            leaf: leaf(notBefore: notBefore, lifetimeDays: row.lifetimeDays), embeddedSCTs: 9, deliveredSCTs: 9)
        observed.sctVerification = SCTVerification(logList: "apple.json", scts: row.scts)
        let result = try verdict(try policy(""), observed: observed)
        #expect(violationNames(result) == (row.fails ? ["ct"] : []), "counted, 9 and 9 would pass: the list decides")
        if row.fails {
            #expect(result.violations.first?.explanation.hasPrefix("verified against apple.json") == true)
        }
    }

    @Test("without a list the SCTs are counted, and the verdict says so")
    func counted() throws {
        let observed = connection(embeddedSCTs: 1)
        let result = try verdict(try policy(""), observed: observed)
        #expect(result.violations.first?.explanation.contains("counted: no CT log list") == true)
    }
}
