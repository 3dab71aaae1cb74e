/// What every fuzz target shares: run its one-input function under libFuzzer (a build with
/// `-sanitize=fuzzer,address -DFUZZING`, `make fuzz`), or, in an ordinary build, over the files
/// named on its command line (a corpus replayed: `make test` runs every seed this way).
///
/// libFuzzer brings its own `main`, which SwiftPM's executables cannot have (it renames theirs to
/// `<product>_main`): each target defines that name and calls ``run(_:_:_:)``, which hands over
/// to libFuzzer's `LLVMFuzzerRunDriver`.
package enum FuzzDriver {
    /// One input, as libFuzzer passes it.
    package typealias OneInput = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32

    #if FUZZING
        /// Runs libFuzzer with the process's arguments (its options, then corpus directories).
        package static func run(
            _ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ input: OneInput
        ) -> Int32 {
            var count = argc
            var arguments = argv
            return runFuzzerDriver(&count, &arguments, input)
        }
    #endif

    /// The ordinary build's `main`: replays the files named on the command line and says how many.
    package static func replayCommandLine(_ input: OneInput) {
        print("\(replay(Array(CommandLine.arguments.dropFirst()), input)) inputs")
    }

    /// Runs `input` on every file named in `paths` (directories: every file in them); returns the
    /// number of inputs run. A crash is the failure, as under libFuzzer.
    package static func replay(_ paths: [String], _ input: OneInput) -> Int {
        var count = 0
        for path in paths {
            for file in files(at: path) {
                guard let bytes = read(file) else { continue }
                _ = bytes.withUnsafeBufferPointer { input($0.baseAddress, $0.count) }
                count += 1
            }
        }
        return count
    }
}

#if FUZZING
    @_silgen_name("LLVMFuzzerRunDriver")
    private func runFuzzerDriver(
        _ argc: UnsafeMutablePointer<Int32>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ input: FuzzDriver.OneInput
    ) -> Int32
#endif
