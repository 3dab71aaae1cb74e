internal import COpenSSL

/// A failure of the TLS layer, with OpenSSL's error queue drained at the throw site so the message
/// survives (as swift-nio-ssl's `buildErrorStack` does).
package struct TLSError: Error, Sendable, CustomStringConvertible {
    package var operation: String
    /// OpenSSL's own messages, oldest first ("error:0A000086:SSL routines::certificate verify failed").
    package var openSSLErrors: [String]

    package var description: String {
        openSSLErrors.isEmpty ? "\(operation) failed" : "\(operation) failed: " + openSSLErrors.joined(separator: "; ")
    }

    /// Builds the error and empties the thread's OpenSSL error queue.
    static func drainingQueue(_ operation: String) -> TLSError {
        TLSError(operation: operation, openSSLErrors: drainErrorQueue())
    }

    static func drainErrorQueue() -> [String] {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
        return messages
    }
}
