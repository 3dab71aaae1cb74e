import Foundation

/// Waits for a state the test cannot be told about directly (a log line written, a count reached,
/// a file created, a connection closed): polls `condition` every `interval` seconds until it holds
/// or `timeout` seconds pass, and returns whether it held. The timeout only matters when the test
/// is failing, so it is generous: a shared, busy 2-core machine must not turn a slow event into a
/// failure. Where a test waits for the proxy, it waits through this (or a stream's readiness, a
/// process's exit), never for a fixed time.
package func eventually(timeout: Double = 30, interval: Double = 0.05, _ condition: () throws -> Bool) rethrows -> Bool
{
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if try condition() { return true }
        if Date() >= deadline { return false }
        Thread.sleep(forTimeInterval: interval)
    }
}
