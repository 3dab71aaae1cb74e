import TLSInspection
import Testing

/// The hosts file's lines: what a table maps, and the lines it refuses with their line number.
@Suite("hosts file")
struct HostsTableTests {
    @Test("names map to the addresses of their lines, in file order, whatever their case or trailing dot")
    func mapping() throws {
        let table = try HostsTable(
            path: "hosts",
            text:
                "# lab\n192.0.2.10\tAPI.Example.com. api # staging\r\n2001:db8::10 api.example.com\n\n192.0.2.10 api\n")
        #expect(table.addresses(for: "api.example.com") == ["192.0.2.10", "2001:db8::10"])
        #expect(table.addresses(for: "API") == ["192.0.2.10"])
        #expect(table.addresses(for: "other.example.com") == nil)
    }

    /// Found writing these tests: split as Characters, "\r\n" is one grapheme, neither "\n" nor "\r",
    /// so a CRLF file was one line: its first name swallowed the next line's address.
    @Test(
        "line ends and separators are bytes: LF or CRLF, spaces, tabs",
        arguments: [
            "10.0.0.1 a.test\n10.0.0.2 b.test\n",
            "10.0.0.1 a.test\r\n10.0.0.2 b.test\r\n",
            "10.0.0.1\ta.test # one\r\n10.0.0.2 \t b.test",
            // A combining mark after the space belongs to the next name, not to the separator.
            "10.0.0.1 a.test \u{301}x\n10.0.0.2 b.test\n",
        ])
    func lineEnds(_ text: String) throws {
        let table = try HostsTable(path: "hosts", text: text)
        #expect(table.addresses(for: "a.test") == ["10.0.0.1"])
        #expect(table.addresses(for: "b.test") == ["10.0.0.2"])
    }

    /// Each text's error: its line and the start of its reason.
    @Test(
        "a line that is not an address and names is refused with its line",
        arguments: [
            ("127.0.0.1 app.test\n127.0.0.x app.test\n", 2, "\"127.0.0.x\" is not an IPv4 or IPv6 address"),
            ("198.51.100.7 # names commented out\n", 1, "the address 198.51.100.7 names no host"),
            // Found by fuzz-hosts-file: inet_pton stops at the NUL, so "::" was checked and "::\0" kept.
            ("::\0 t", 1, "\"::\0\" is not an IPv4 or IPv6 address"),
            ("127.0.0.1\0evil app.test\n", 1, "\"127.0.0.1\0evil\" is not an IPv4 or IPv6 address"),
        ])
    func refused(_ text: String, _ line: Int, _ reason: String) {
        #expect {
            try HostsTable(path: "hosts", text: text)
        } throws: { error in
            guard let error = error as? HostsTable.ReadError else { return false }
            return error.line == line && error.reason == reason
        }
    }
}
