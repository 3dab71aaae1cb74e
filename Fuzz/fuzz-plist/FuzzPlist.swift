import ATSPolicy
import FuzzDriver

/// Info.plists: the XML and binary property-list parsers, and the policy loader over what they make.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPlist(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? PropertyListParser.parse(bytes)
    _ = try? PolicyLoader.load(bytes: bytes, file: "fuzz.plist")
    return 0
}

#if FUZZING
    @_cdecl("fuzz_plist_main")
    func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        FuzzDriver.run(argc, argv, fuzzPlist)
    }
#else
    @main enum Replay {
        static func main() { FuzzDriver.replayCommandLine(fuzzPlist) }
    }
#endif
