import EventLoop
import LogRecord

/// Bytes inside an intercepted TLS connection that are not HTTP (a protocol of the app's own over
/// TLS, or what a request upgraded to, such as a WebSocket): relayed both ways as they come, with
/// backpressure and half-closes, and counted on one line: a `tls_stream` line, or the upgraded
/// request's own (its body byte counts are then the new protocol's bytes each way).
extension InterceptedExchanges {
    func relayStream(upgradedTo name: String?) {
        if let name {
            current?.record.upgrade = name
            current?.record.requestBodyBytes = 0
            current?.record.responseBodyBytes = 0
        } else {
            current?.record.kind = .tlsStream
        }
        // A page-style block has no origin: nothing to relay to.
        guard let origin else { return end() }
        device.setTimeouts(read: nil, write: nil)
        origin.setTimeouts(read: nil, write: nil)
        watchIdle([device, origin]) { [unowned self] ending in
            logCurrent(error: closedReason(ending).text)
            end()
        }
        device.onReadable = { [unowned self] _ in pump(up: true, origin) }
        origin.onReadable = { [unowned self] _ in pump(up: false, origin) }
        device.onEvent = { [unowned self] _, event in streamEvent(event, up: true, origin) }
        origin.onEvent = { [unowned self] _, event in streamEvent(event, up: false, origin) }
        device.setReading(true)
        origin.setReading(true)
        // What came with the last head (a WebSocket's first frames) is buffered already.
        pump(up: true, origin)
        pump(up: false, origin)
    }

    /// Moves what one side has to the other: `up` is device to origin.
    private func pump(up: Bool, _ origin: TLSByteStream) {
        let (source, target) = up ? (device, origin) : (origin, device)
        let moved = Int64(source.moveInput(to: target, maximum: .max))
        if up {
            current?.record.requestBodyBytes += moved
            tunnel.findings.bytesUp += moved
        } else {
            current?.record.responseBodyBytes += moved
            tunnel.findings.bytesDown += moved
        }
        Backpressure.apply(source: source, target: target) { [weak self] in
            guard let self else { return false }
            return up ? !streamEnds.device : !streamEnds.origin
        }
    }

    private func streamEvent(_ event: StreamEvent, up: Bool, _ origin: TLSByteStream) {
        switch event {
        case .endOfStream:
            pump(up: up, origin)
            if up { streamEnds.device = true } else { streamEnds.origin = true }
            if (up ? device : origin).endedCleanly == false { (up ? origin : device).passOnTruncation() }
            (up ? origin : device).shutdownWrite()
            guard streamEnds.device, streamEnds.origin else { return }
            logCurrent(error: nil)
            end()
        case .connected:
            return
        case .error, .timeout:
            logCurrent(error: "\(up ? "the device" : "the origin"): \(event)")
            end()
        }
    }
}
