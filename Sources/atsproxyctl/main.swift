import ATSProxyCtl
import Foundation

// The command types live in ATSProxyCtl so tests can run them without a process.
let status = ATSProxyCtl.run(Array(CommandLine.arguments.dropFirst()), output: Output(streaming: true))
exit(status)
