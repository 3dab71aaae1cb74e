import FuzzDriver
import Glibc
import TLSInspection

/// The hosts file (`hosts-file`, `diagnose --hosts-file`): /etc/hosts lines, read again on every
/// reload, then looked up by every word of the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHostsFile(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let table = try? HostsTable(path: "fuzz.hosts", text: text) else { return 0 }
    for word in text.split(whereSeparator: { $0.isWhitespace }).prefix(64) {
        for address in table.addresses(for: String(word)) ?? [] {
            // What the dialer is given must be the address the file wrote, whole: inet_pton stops at
            // a NUL, so a table that keeps one would dial something other than what it checked.
            precondition(isNumericAddress(address), "the table gave \(address.debugDescription), not an address")
        }
    }
    return 0
}

private func isNumericAddress(_ text: String) -> Bool {
    guard !text.utf8.contains(0) else { return false }
    var v4 = in_addr()
    var v6 = in6_addr()
    return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
}

#if FUZZING
    @_cdecl("fuzz_hosts_file_main")
    func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        FuzzDriver.run(argc, argv, fuzzHostsFile)
    }
#else
    @main enum Replay {
        static func main() { FuzzDriver.replayCommandLine(fuzzHostsFile) }
    }
#endif
