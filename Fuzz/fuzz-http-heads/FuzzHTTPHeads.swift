import FuzzDriver
import ProxyWire

/// HTTP/1.1 from both sides: the bytes as a request head (sent to the proxy, and inside an
/// intercepted connection), as a response head, and as a chunked body; whole, then byte by byte.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPHeads(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    for origin in [nil, RequestOrigin(scheme: "https", host: "api.example.com", port: 443)] {
        var whole = RequestHeadParser(origin: origin)
        if case .complete(let head, _) = whole.consume(bytes) {
            _ = try? head.bodyFraming()
            _ = head.isKeepAlive
        }
        var split = RequestHeadParser(origin: origin)
        for byte in bytes.prefix(4096) {
            if case .needMoreData = split.consume([byte]) { continue }
            break
        }
    }
    var response = ResponseHeadParser()
    if case .complete(let head, _) = response.consume(bytes) { _ = try? head.bodyFraming(requestMethod: "GET") }
    var chunks = ChunkedBodyScanner()
    _ = try? chunks.scan(bytes)
    return 0
}

#if FUZZING
    @_cdecl("fuzz_http_heads_main")
    func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        FuzzDriver.run(argc, argv, fuzzHTTPHeads)
    }
#else
    @main enum Replay {
        static func main() { FuzzDriver.replayCommandLine(fuzzHTTPHeads) }
    }
#endif
