import ATSProxyDaemon
import Foundation
import TLSTestSupport
import Testing

/// The fuzz targets' seed corpora, replayed through the same one-input functions libFuzzer runs
/// (`make fuzz`), by the ordinary build of each target: every seed parses without a crash, and a
/// crash a fuzzer once found stays fixed once its input is added to the seeds.
@Suite struct FuzzCorpusTests {
    static let targets: [(target: String, seeds: [String])] = [
        ("fuzz-http-heads", ["Fuzz/Corpus/http-heads"]),
        ("fuzz-tls-hello", ["Tests/ProxyWireTests/Fixtures/tls"]),
        (
            "fuzz-plist",
            [
                "Tests/ATSPolicyTests/Fixtures/plist", "Tests/ATSPolicyTests/Fixtures/policies",
                "Tests/ATSPolicyTests/Fixtures/mistakes",
            ]
        ),
        ("fuzz-log-lines", ["Tests/ATSProxyCtlTests/Fixtures/report", "Tests/ATSProxyCtlTests/Fixtures/har"]),
        ("fuzz-config", ["Fuzz/Corpus/config"]),
        ("fuzz-hosts-file", ["Fuzz/Corpus/hosts-file"]),
        ("fuzz-control", ["Fuzz/Corpus/control"]),
    ]

    @Test("every seed of every fuzz target runs through it without a crash", arguments: Self.targets.map(\.target))
    func seedsReplay(target: String) throws {
        let seeds = try #require(Self.targets.first { $0.target == target }?.seeds).map(Repository.path)
        let replayer = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent(target).path
        try #require(FileManager.default.isExecutableFile(atPath: replayer), "\(replayer) is not built")
        let result = try runCommand(replayer, seeds, timeLimit: 60)
        #expect(result.status == 0, "\(result.standardError)")
        let count = Int(result.standardOutput.split(separator: " ").first ?? "") ?? 0
        #expect(count > 0, "\(result.standardOutput)")
    }
}
