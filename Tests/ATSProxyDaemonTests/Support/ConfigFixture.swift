import Foundation

/// A scratch directory for config files and the files they name, removed with the fixture.
final class ConfigFixture {
    let directory: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.path + "/atsproxy-config-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func path(_ name: String) -> String { directory + "/" + name }

    /// Writes `text` to `name` (creating its directories) and returns the full path.
    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        let path = path(name)
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}

/// Files of this repository, found from this source file's place in it, so tests check what ships.
enum Repository {
    static func path(_ relative: String) -> String {
        // Tests/ATSProxyDaemonTests/Support/ConfigFixture.swift: the root is four levels up.
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { root.deleteLastPathComponent() }
        return root.appendingPathComponent(relative).path
    }
}
