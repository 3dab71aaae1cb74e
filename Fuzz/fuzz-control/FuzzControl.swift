import ATSPolicy
import ControlProtocol
import FuzzDriver
import TextFormats

/// The control socket, both ways: the daemon reading a client's request line (``ControlRequest``),
/// and atsproxyctl reading the daemon's one-line JSON answer as `ControlSocketOptions.ask` does.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzControl(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    readRequest(bytes)
    readAnswer(bytes)
    return 0
}

/// The request as the daemon peeks at it: whole, and as it stood one byte before its first newline
/// arrived, which must be a wait (or too long), never a command.
private func readRequest(_ bytes: UnsafeBufferPointer<UInt8>) {
    let request = ControlRequest(parsing: bytes)
    if case .unknown(let name) = request { precondition(ControlCommand(rawValue: name) == nil, name) }
    guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) else {
        precondition(request == .incomplete || request == .tooLong, "\(request) without a newline")
        return
    }
    let before = ControlRequest(parsing: bytes[..<newline])
    precondition(before == .incomplete || before == .tooLong, "\(before) before the newline")
}

/// The answer as atsproxyctl reads it: trailing newlines dropped (``ControlClient``), parsed, its
/// `ok` and `error` read, and printed with `--json`, which must read back as the same value.
private func readAnswer(_ bytes: UnsafeBufferPointer<UInt8>) {
    var end = bytes.endIndex
    while end > bytes.startIndex, bytes[end - 1] == UInt8(ascii: "\n") { end -= 1 }
    guard let answer = try? JSONValue(parsing: bytes[..<end]) else { return }
    _ = answer["ok"]?.boolValue == true
    _ = answer["error"]?.stringValue
    let printed = answer.serialized
    precondition((try? JSONValue(parsing: printed)) == answer, "\(printed) does not read back as what was parsed")
    _ = answer.prettyPrinted
}

#if FUZZING
    @_cdecl("fuzz_control_main")
    func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        FuzzDriver.run(argc, argv, fuzzControl)
    }
#else
    @main enum Replay {
        static func main() { FuzzDriver.replayCommandLine(fuzzControl) }
    }
#endif
