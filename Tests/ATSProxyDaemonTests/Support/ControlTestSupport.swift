import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// Runs `atsproxyctl` in this process, as its `main` would (no process, same exit statuses).
func atsproxyctl(_ arguments: String...) -> ATSProxyCtl.Result { ATSProxyCtl.run(arguments) }

/// The JSON object `atsproxyctl … --json` printed, or nil when the output is not one.
func jsonObject(_ text: String) -> [String: Any]? {
    try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
}

/// `value[first][second]…` in parsed JSON.
func jsonValue(_ object: [String: Any]?, _ path: String...) -> Any? {
    var current: Any? = object
    for key in path { current = (current as? [String: Any])?[key] }
    return current
}

/// Asks the daemon at `socket` for `stats --json` and returns the answer, or nil when it did not parse.
func daemonStats(_ socket: String) -> [String: Any]? {
    let result = atsproxyctl("stats", "--socket", socket, "--json")
    return result.exitCode == 0 ? jsonObject(result.standardOutput) : nil
}

/// Asks the daemon at `socket` for `status --json` and returns the answer, or nil when it did not parse.
func daemonStatus(_ socket: String) -> [String: Any]? {
    let result = atsproxyctl("status", "--socket", socket, "--json")
    return result.exitCode == 0 ? jsonObject(result.standardOutput) : nil
}

/// A policy file a test rewrites between reloads, always at the same path (as an operator edits it).
struct PolicyFile {
    let path: String

    init(directory: String, name: String = "Info.plist") {
        path = directory + "/" + name
    }

    /// An Info.plist whose NSAppTransportSecurity dictionary holds `inner` (XML); written to a
    /// temporary file and renamed over the old one, so the daemon never reads half a file.
    func write(ats inner: String) throws {
        try write(
            raw: "<plist version=\"1.0\"><dict><key>NSAppTransportSecurity</key><dict>\(inner)</dict></dict></plist>\n")
    }

    func write(raw text: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// An exception for `host` allowing http:// (NSExceptionAllowsInsecureHTTPLoads).
    static func insecureHTTP(for host: String) -> String {
        "<key>NSExceptionDomains</key><dict><key>\(host)</key><dict>"
            + "<key>NSExceptionAllowsInsecureHTTPLoads</key><true/></dict></dict>"
    }

    /// Cut off in the middle of a dictionary: not a property list.
    static let truncated =
        "<plist version=\"1.0\"><dict><key>NSAppTransportSecurity</key><dict>\n<key>NSExceptionDomains</key>\n"

    /// A well-formed plist whose NSAppTransportSecurity is a string: PolicyLoader refuses the file.
    static let atsNotADictionary =
        "<plist version=\"1.0\"><dict>\n<key>NSAppTransportSecurity</key>\n<string>yes</string>\n</dict></plist>\n"

    /// SHA-256 of the file as it is now, hex, computed by sha256sum (not by the code under test).
    func sha256() throws -> String { try sha256sum(path) }
}

/// SHA-256 of a file, hex, from `sha256sum`.
func sha256sum(_ path: String) throws -> String {
    let result = try runCommand("/usr/bin/sha256sum", [path])
    return String(result.standardOutput.prefix { !$0.isWhitespace })
}

/// Writes a hosts file naming each of `names` as 127.0.0.1 and returns its path.
func writeHostsFile(in directory: String, _ names: [String]) throws -> String {
    let path = directory + "/hosts"
    try names.map { "127.0.0.1 \($0)\n" }.joined().write(toFile: path, atomically: true, encoding: .utf8)
    return path
}

/// `curl` through the proxy on 127.0.0.1:`proxyPort`, body discarded: the HTTP status it got (0 for
/// none) and its stderr.
func curlStatus(proxyPort: UInt16, _ url: String, _ extra: [String] = []) throws -> (code: Int, error: String) {
    let result = try runCommand(
        "/usr/bin/curl",
        [
            "-sS", "--max-time", "30", "-o", "/dev/null", "-w", "%{http_code}", "--proxy",
            "http://127.0.0.1:\(proxyPort)",
        ] + extra + [url])
    return (Int(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0, result.standardError)
}

/// Waits for the process to exit, at most `timeout` seconds; returns whether it did.
func waitForExit(_ process: Process, timeout: Double) -> Bool {
    eventually(timeout: timeout) { process.hasExited }
}

extension DaemonProcess {
    /// Waits until the daemon's stderr has a line containing `text` (at most `timeout` seconds) and
    /// returns that line.
    func standardErrorLine(containing text: String, timeout: Double = 15) -> String? {
        var found: String?
        _ = eventually(timeout: timeout) {
            found = standardError.split(separator: "\n").last { $0.contains(text) }.map(String.init)
            return found != nil
        }
        return found
    }

    /// How many stderr lines contain `text` now.
    func standardErrorCount(of text: String) -> Int {
        standardError.split(separator: "\n").count { $0.contains(text) }
    }

    var pid: Int32 { process.processIdentifier }

    /// Waits until the daemon has no client connection open (`stats`' active connections is 0), at
    /// most `timeout` seconds; returns whether it got there. A session writes its log line before it
    /// leaves that count, so from then on the log holds every line the sessions so far will write.
    func awaitNoOpenConnections(timeout: Double = 30) -> Bool {
        eventually(timeout: timeout) { jsonValue(daemonStats(controlSocket), "connections", "active") as? Int == 0 }
    }
}
