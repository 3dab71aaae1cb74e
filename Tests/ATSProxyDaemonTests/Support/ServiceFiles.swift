import Foundation

/// The repository's service files (the unit, the logrotate snippet, install.mk) and the system tools
/// that check them, for tests that work on copies in a temporary directory.
enum ServiceFiles {
    /// The repository's root: this file is Tests/ATSProxyDaemonTests/Support/ServiceFiles.swift.
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.path
    }()

    static func path(_ relative: String) -> String { root + "/" + relative }

    static func text(_ relative: String) throws -> String {
        try String(contentsOfFile: path(relative), encoding: .utf8)
    }

    /// The directory holding the `atsproxy` and `atsproxyctl` that `swift build --build-tests` made.
    static var binaries: String { URL(fileURLWithPath: DaemonProcess.executable).deletingLastPathComponent().path }

    /// A program on PATH, or in the sbin directories a non-root PATH may leave out (logrotate).
    static func tool(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        return directories.map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// A fresh directory, removed by the caller.
    static func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.path + "/atsproxy-service-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// The lines of a tool's output that concern `name`: the tools also speak of other units and
    /// files on the machine, which these tests do not judge.
    static func lines(of output: String, mentioning name: String) -> [String] {
        output.split(separator: "\n").map(String.init).filter { $0.contains(name) }
    }
}
