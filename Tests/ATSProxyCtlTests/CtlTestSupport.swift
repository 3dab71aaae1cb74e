import ATSProxyCtl
import Foundation
import Testing

/// A scratch directory for one test, removed when the value goes away.
final class ScratchDirectory {
    let path: String

    init() throws {
        let base = FileManager.default.temporaryDirectory.path
        path = base + "/atsproxyctl-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Writes `contents` to `name` and returns its path.
    @discardableResult
    func write(_ name: String, _ contents: String) throws -> String {
        let file = path + "/" + name
        try Data(contents.utf8).write(to: URL(fileURLWithPath: file))
        return file
    }

    /// Writes an NSAppTransportSecurity dictionary (its inner XML) as a policy file.
    func policy(_ innerXML: String, name: String = "policy.plist") throws -> String {
        try write(name, plistDocument(innerXML))
    }
}

func plistDocument(_ innerDictionaryXML: String) -> String {
    """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0">
    <dict>
    \(innerDictionaryXML)
    </dict>
    </plist>
    """
}

/// The repository's root, for the example policies in config/.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

/// Parses each line of `text` as a JSON object.
func jsonLines(_ text: String) throws -> [[String: Any]] {
    try text.split(separator: "\n").map { line in
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
        return try #require(object as? [String: Any])
    }
}

func ctl(_ arguments: String...) -> ATSProxyCtl.Result { ATSProxyCtl.run(arguments) }

/// The tests' own Python, with the PyPI packages `make test-venv` installs (jsonschema, xmlschema…):
/// ATSPROXY_TEST_PYTHON, else `.build/test-venv/bin/python3` in the repository.
let testPython: String =
    ProcessInfo.processInfo.environment["ATSPROXY_TEST_PYTHON"] ?? repositoryRoot + "/.build/test-venv/bin/python3"
