/// Whether bytes begin with an HTTP/1 request line in any target form (`GET /path HTTP/1.1`), by
/// the same scanner as the head parser. For a tunnel's first bytes: the head parser itself expects
/// what a proxy is sent (absolute form or CONNECT), while a device talking to a cleartext server
/// through a tunnel sends origin form.
public enum RequestLineDetection {
    public static func startsWithRequestLine(_ bytes: some Collection<UInt8>) -> Bool {
        var scanner = RequestLineScanner()
        for byte in bytes {
            if byte == HTTPSyntax.carriageReturn || byte == HTTPSyntax.lineFeed {
                if case .success = scanner.finish() { return true }
                return false
            }
            if scanner.accept(byte) != nil { return false }
        }
        return false
    }
}
