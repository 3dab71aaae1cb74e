import FuzzDriver
import ProxyWire

/// TLS in transit: the bytes as what a device sends first (its ClientHello, or an SSLv2 hello) and
/// as what a server answers, fed whole and in 7-byte pieces (records split anywhere).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTLSHello(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    for direction in [TLSHelloScanner.Direction.clientToServer, .serverToClient] {
        var whole = TLSHelloScanner(direction: direction)
        _ = whole.feed(bytes)
        var pieces = TLSHelloScanner(direction: direction)
        var start = 0
        while start < bytes.count {
            _ = pieces.feed(bytes[start..<min(start + 7, bytes.count)])
            start += 7
        }
    }
    return 0
}

#if FUZZING
    @_cdecl("fuzz_tls_hello_main")
    func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        FuzzDriver.run(argc, argv, fuzzTLSHello)
    }
#else
    @main enum Replay {
        static func main() { FuzzDriver.replayCommandLine(fuzzTLSHello) }
    }
#endif
