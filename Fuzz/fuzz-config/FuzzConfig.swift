import ATSProxyDaemon
import FuzzDriver

/// The daemon's config file (`--config`): the `key = value` lines, every value typed and checked,
/// the defaults and the checks across settings, as `--check-config` reads a file.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    do {
        _ = try DaemonConfiguration(configFile: "fuzz.conf", bytes: bytes)
    } catch {
        // Every refusal names the file, as the operator is told to look there.
        precondition(error.description.hasPrefix("fuzz.conf"), "\(error)")
    }
    return 0
}

#if FUZZING
    @_cdecl("fuzz_config_main")
    func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        FuzzDriver.run(argc, argv, fuzzConfig)
    }
#else
    @main enum Replay {
        static func main() { FuzzDriver.replayCommandLine(fuzzConfig) }
    }
#endif
