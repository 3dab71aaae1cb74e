import Foundation
import TLSTestSupport
import Testing

/// config/atsproxy.logrotate, as logrotate reads it.
@Suite("the logrotate snippet", .startsProcesses(timeLimit: .seconds(60)))
struct LogrotateTests {
    @Test(
        "logrotate -d accepts it and would rotate, then ask the daemon to reopen its logs",
        .enabled(
            if: ServiceFiles.tool("logrotate") != nil, "logrotate is not installed (Debian: apt-get install logrotate)")
    )
    func dryRun() throws {
        let directory = try ServiceFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/log", withIntermediateDirectories: true)
        try "{}\n".write(toFile: directory + "/log/access.log", atomically: true, encoding: .utf8)
        // The snippet rotates as the service's user; here as whoever runs the test, since logrotate
        // refuses an unknown user and the atsproxy account may come and go while this runs (the
        // Debian package's test makes it and removes it).
        var snippet = try ServiceFiles.text("config/atsproxy.logrotate")
            .replacingOccurrences(of: "/var/log/atsproxy/", with: directory + "/log/")
        if let user = getpwuid(geteuid()), let group = getgrgid(getegid()) {
            snippet = snippet.replacingOccurrences(
                of: "su atsproxy atsproxy",
                with: "su \(String(cString: user.pointee.pw_name)) \(String(cString: group.pointee.gr_name))")
        }
        try snippet.write(toFile: directory + "/atsproxy", atomically: true, encoding: .utf8)
        // -d changes nothing; -f rotates even though the file is new, to reach postrotate.
        let result = try runCommand(
            try #require(ServiceFiles.tool("logrotate")),
            ["-d", "-f", "-s", directory + "/state", directory + "/atsproxy"])
        let output = result.standardOutput + result.standardError
        #expect(result.status == 0, "\(output)")
        #expect(!output.contains("error:"), "\(output)")
        #expect(output.contains("renaming \(directory)/log/access.log to \(directory)/log/access.log.1"), "\(output)")
        #expect(output.contains("running postrotate script"), "\(output)")
        #expect(
            output.contains("/usr/local/bin/atsproxyctl reopen-logs --socket /run/atsproxy/control.sock"), "\(output)")
        #expect(try String(contentsOfFile: directory + "/log/access.log", encoding: .utf8) == "{}\n")
    }
}
