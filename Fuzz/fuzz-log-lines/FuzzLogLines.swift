import FuzzDriver
import TrafficReport

/// The daemon's logs read back (`report`, `har`, the live view): JSON lines, plain or gzip, into
/// connection and request records and the per-host tally.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLogLines(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var collection = LogCollection()
    collection.add(LogFile(path: "fuzz.log", contents: Array(UnsafeBufferPointer(start: data, count: size))))
    _ = collection.hostTraffic
    return 0
}

#if FUZZING
    @_cdecl("fuzz_log_lines_main")
    func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        FuzzDriver.run(argc, argv, fuzzLogLines)
    }
#else
    @main enum Replay {
        static func main() { FuzzDriver.replayCommandLine(fuzzLogLines) }
    }
#endif
