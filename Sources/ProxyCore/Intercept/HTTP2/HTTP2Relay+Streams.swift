import ATSPolicy
import HTTP2
import LogRecord
import ProxyWire

/// What each leg's session tells the relay, stream by stream: requests opened on the origin's leg,
/// responses, bodies and trailers passed back, resets and GOAWAYs passed on.
extension HTTP2Relay: HTTP2SessionDelegate {
    func session(
        _ session: HTTP2Session, headers: [HTTP2Field], kind: HTTP2HeadersKind, on stream: Int32, endsStream: Bool
    ) {
        if session === deviceSession {
            if kind == .request { return opened(stream, headers, endsStream: endsStream) }
            // Trailers from the device: the request's end.
            guard let relayed = streams[stream] else { return }
            relayed.requestEnded = true
            if let id = relayed.originID { originSession.finish(id, trailers: headers) }
        } else if let id = deviceStreamID[stream] {
            responded(id, headers, endsStream: endsStream)
        }
    }

    func session(_ session: HTTP2Session, data: UnsafeRawBufferPointer, on stream: Int32) {
        if session === deviceSession {
            guard let relayed = streams[stream] else { return }
            relayed.record.requestBodyBytes += Int64(data.count)
            if let id = relayed.originID {
                relayed.requestBytesHeld += data.count
                originSession.send(data, on: id)
            } else if !relayed.stopping {
                // Nowhere to go (the proxy answered it): taken, so the device's window stays open.
                deviceSession.consumed(data.count, on: stream)
            }
        } else if let id = deviceStreamID[stream], let relayed = streams[id] {
            relayed.record.responseBodyBytes += Int64(data.count)
            relayed.responseBytesHeld += data.count
            deviceSession.send(data, on: id)
        } else {
            // The device's stream is gone: the bytes are dropped, and the origin may send as many again.
            originSession.consumed(data.count, on: stream)
        }
    }

    func session(_ session: HTTP2Session, endedDataOn stream: Int32) {
        if session === deviceSession {
            guard let relayed = streams[stream] else { return }
            relayed.requestEnded = true
            if let id = relayed.originID { originSession.finish(id) }
        } else if let id = deviceStreamID[stream] {
            streams[id]?.responseEnded = true
            deviceSession.finish(id)
        }
    }

    func session(_ session: HTTP2Session, dataTaken count: Int, on stream: Int32) {
        // Framed for one leg: the other leg's peer may send as many again.
        bodyMovement.note()
        if session === deviceSession {
            guard let relayed = streams[stream] else { return }
            switch relayed.twin {
            case .open(let id):
                relayed.responseBytesHeld -= count
                originSession.consumed(count, on: id)
            case .closed:
                relayed.responseBytesHeld -= count
                originSession.consumedAfterClose(count)
            case .none:
                // The proxy's own answer (a page, a refusal): no origin byte, no origin window.
                break
            }
        } else if let id = deviceStreamID[stream] {
            streams[id]?.requestBytesHeld -= count
            deviceSession.consumed(count, on: id)
        }
    }

    func session(_ session: HTTP2Session, sentEndOf stream: Int32) {
        // The request's END_STREAM went out to the origin: it is sent (`send_ms`), however long its
        // HEADERS waited for the origin's stream limit or its body for the windows.
        guard session === originSession, let id = deviceStreamID[stream], let relayed = streams[id] else { return }
        relayed.record.sendMilliseconds = max(0, clock.monotonicMilliseconds - relayed.startedAt)
    }

    func session(_ session: HTTP2Session, closed stream: Int32, code: HTTP2ErrorCode, reason: HTTP2StreamReset?) {
        if session === deviceSession {
            guard let relayed = streams[stream] else {
                // Reset by the proxy's library before a request was seen: a line of its own says why,
                // and what the request was as far as its pseudo-header fields came.
                switch reason {
                case .headerListTooLarge(let size, let head)?:
                    logRefused(
                        stream, head: head,
                        why: "the device's header list is larger than \(size) bytes (the limit is "
                            + "\(deviceSession.settings.maxHeaderListSize))")
                case .brokeRules(let resetCode, let why, let head)?:
                    logRefused(stream, head: head, why: "the device sent \(why); the stream was reset (\(resetCode))")
                case nil:
                    break
                }
                return
            }
            // What was held for the device and will not be framed now: the origin's window gets it back.
            originSession.consumedAfterClose(relayed.responseBytesHeld)
            if let id = relayed.originID {
                // The device is done with it, or reset it: the origin's twin ends too.
                deviceStreamID[id] = nil
                originSession.reset(id, code: .cancel)
            }
            switch (code, reason) {
            case (_, .headerListTooLarge(let size, _)?):
                logStream(stream, error: "the device's header list is larger than \(size) bytes", failure: nil)
            case (_, .brokeRules(let resetCode, let why, _)?):
                logStream(
                    stream, error: "bad request: the device sent \(why); the stream was reset (\(resetCode))",
                    failure: .badRequest)
            case (.noError, nil):
                logStream(stream, error: nil, failure: nil)
            default:
                if case .closed(let originCode) = relayed.twin, originCode != .noError {
                    logStream(stream, error: "the origin reset the stream: \(originCode)", failure: .upstreamClosed)
                } else {
                    logStream(stream, error: "the device reset the stream: \(code)", failure: .clientClosed)
                }
            }
        } else if let id = deviceStreamID.removeValue(forKey: stream) {
            let relayed = streams[id]
            relayed?.twin = .closed(code)
            if code == .noError, reason == nil, let relayed, !(relayed.responseEnded && relayed.requestEnded) {
                // RST_STREAM NO_ERROR from the origin before both ends were in.
                return originStoppedEarly(relayed, id)
            }
            // The request's bytes still queued for the origin's stream are dropped with it: the
            // device's windows get them back, so a device still uploading is not left stalled.
            if let relayed, relayed.requestBytesHeld > 0 {
                deviceSession.consumed(relayed.requestBytesHeld, on: id)
                relayed.requestBytesHeld = 0
            }
            // The proxy's library reset it, not the origin: the line says what the origin sent.
            switch reason {
            case .headerListTooLarge(let size, _)?:
                relayed?.record.upstreamError =
                    "the origin's header list is larger than \(size) bytes (the limit is \(originSession.settings.maxHeaderListSize)): "
                    + "the stream was reset"
                relayed?.record.failure = .badResponse
            case .brokeRules(let resetCode, let why, _)?:
                relayed?.record.upstreamError =
                    "bad response: the origin sent \(why); the stream was reset (\(resetCode))"
                relayed?.record.failure = .badResponse
            case nil:
                break
            }
            guard code != .noError || reason != nil else { return }
            // Reset by the origin (or refused, past its GOAWAY): the device's stream ends the same way,
            // and a refused one may be retried by the device.
            deviceSession.reset(id, code: code == .noError ? .internalError : code)
        }
    }

    /// The origin reset its stream with NO_ERROR before both ends were in. With its answer whole,
    /// it wants no more of the request (RFC 9113 §8.1): the device is asked the same once the answer
    /// is out, and meanwhile its windows stay as they are, so it does not upload the rest for the
    /// proxy to drop (what it sent and no one took goes back to the connection's window when the
    /// stream closes). Without it, the answer is cut short: the device's stream ends the same way,
    /// not left waiting for the rest until the idle timeout.
    private func originStoppedEarly(_ relayed: RelayedStream, _ id: Int32) {
        if relayed.responseEnded {
            relayed.stopping = true
            relayed.requestBytesHeld = 0
            deviceSession.resetAfterEnd(id, code: .noError)
            return
        }
        if relayed.record.upstreamError == nil {
            relayed.record.upstreamError = "the origin reset the stream (NO_ERROR) before its response ended"
        }
        if relayed.record.failure == nil { relayed.record.failure = .upstreamClosed }
        deviceSession.reset(id, code: .noError)
    }

    func session(_ session: HTTP2Session, goAway lastStream: Int32, code: HTTP2ErrorCode, debug: [UInt8]) {
        // One leg is going away: the other is told so, and no new stream is relayed.
        goingAway = true
        (session === deviceSession ? originSession : deviceSession).goAway(code: .noError)
        if code != .noError {
            let who = session === deviceSession ? "the device" : "the origin"
            tunnel.findings.fail(
                FailureReason(
                    .http2Error, "\(who) sent GOAWAY \(code): \(String(decoding: debug.prefix(200), as: UTF8.self))"))
        }
    }

    func sessionReceivedSettings(_ session: HTTP2Session) {}

    // MARK: - Requests and responses

    /// A request stream from the device: checked, then submitted to the origin (or answered here).
    private func opened(_ stream: Int32, _ fields: [HTTP2Field], endsStream: Bool) {
        requests += 1
        var record = RequestRecord(
            startedAt: clock.wallMilliseconds, connection: connectionFacts, reused: requests > 1)
        let method = fields.value(of: ":method") ?? "-"
        let path = fields.value(of: ":path") ?? ""
        // The URL is the connection's origin and the path: a :path that is not one (libnghttp2 checks
        // its form only for http and https schemes) would make the line name another host. OPTIONS *
        // asks about the server itself, and a plain CONNECT has no path: their URL is the origin's.
        let pathIsOriginForm =
            path.utf8.first == UInt8(ascii: "/") || (method == "OPTIONS" && path == "*")
            || (method == "CONNECT" && path.isEmpty)
        record.method = method
        record.url = pathIsOriginForm ? urlPrefix + (path == "*" ? "" : path) : nil
        record.httpVersion = "HTTP/2"
        record.streamID = stream
        record.noteUserAgent(fields.value(of: "user-agent"), memo: &userAgents)
        if tunnel.findings.firstRequestApp == nil { tunnel.findings.firstRequestApp = record.requestApp }
        // HPACK-compressed heads have no size of their own on the wire to report.
        record.requestHeadBytes = -1
        if interceptSettings.logHeaders {
            record.requestHeaders = RequestRecord.loggedHeaders(
                fields.map { ($0.nameText, $0.valueText) }, logSecrets: interceptSettings.logSecrets)
        }
        streams[stream] = RelayedStream(
            record: record, startedAt: clock.monotonicMilliseconds, twin: .none, requestEnded: endsStream)
        if let foreign = foreignAuthority(in: fields) {
            return answer(stream, status: 400, body: foreign + "\n", logged: "bad request: \(foreign)")
        }
        if !pathIsOriginForm {
            let words = ":path is not a path beginning with / (RFC 9113 §8.3.1)"
            return answer(stream, status: 400, body: words + "\n", logged: "bad request: \(words)")
        }
        if method == "CONNECT" {
            let words = "CONNECT inside an intercepted HTTP/2 connection is not relayed"
            return answer(stream, status: 405, body: words + "\n", logged: "bad request: \(words)")
        }
        if let blocked { return answerBlocked(stream, fields, verdict: blocked) }
        if goingAway {
            // Past a GOAWAY: refused, so the device may send it again on a new connection. Its line
            // is written now: the reset's close is then no one's.
            logStream(stream, error: "refused (REFUSED_STREAM): the connection is going away", failure: nil)
            deviceSession.reset(stream, code: .refusedStream)
            return
        }
        // The origin's stream ids cannot run out first: each device stream opens at most one origin
        // stream, and both legs number theirs from 1 in odd numbers, so the device's 2^30 end first.
        do {
            let id = try originSession.submitRequest(fields, hasBody: !endsStream)
            streams[stream]?.twin = .open(id)
            deviceStreamID[id] = stream
        } catch {
            answer(
                stream, status: 502, body: "atsproxy could not send the request: \(error)\n",
                logged: "sending the request upstream: \(error)")
        }
    }

    /// Every authority a request names must be the connection's: `:authority`, and `host`, which a
    /// request may carry instead of `:authority` or beside it (libnghttp2 compares neither). Nil when
    /// they all are, else the sentence for the first that is not. A value that is exactly the
    /// connection's is taken without being parsed: nearly every request's is.
    private func foreignAuthority(in fields: [HTTP2Field]) -> String? {
        // `:authority` first, then `host`, without an array of the two names per request.
        for field in fields where field.name.elementsEqual(":authority".utf8) {
            if let foreign = foreignAuthority(named: field) { return foreign }
        }
        for field in fields where field.name.elementsEqual("host".utf8) {
            if let foreign = foreignAuthority(named: field) { return foreign }
        }
        return nil
    }

    private func foreignAuthority(named field: HTTP2Field) -> String? {
        if exactAuthorities.contains(where: { field.value.elementsEqual($0) }) { return nil }
        return requestOrigin.foreignAuthority(named: field.valueText)
    }

    /// A response header list from the origin for the device's stream `id`: interim, final, or trailers.
    private func responded(_ id: Int32, _ fields: [HTTP2Field], endsStream: Bool) {
        guard let relayed = streams[id] else { return }
        let status = fields.value(of: ":status").flatMap { Int($0) }
        do {
            switch status {
            case let code? where (100..<200).contains(code):
                try deviceSession.submitInterim(fields, on: id)
            case let code?:
                relayed.answered = true
                relayed.responseEnded = endsStream
                let waited = clock.monotonicMilliseconds - relayed.startedAt
                relayed.record.noteResponse(
                    status: code, fields, endsStream: endsStream, timeToFirstByte: max(0, waited),
                    headers: interceptSettings)
                try deviceSession.submitResponse(fields, on: id, hasBody: !endsStream)
            case nil:
                relayed.responseEnded = true
                relayed.record.noteGRPC(in: fields)
                deviceSession.finish(id, trailers: fields)
            }
        } catch {
            deviceSession.reset(id, code: .internalError)
            relayed.record.upstreamError = "relaying the response: \(error)"
        }
    }

    /// Answers a stream with the proxy's own response; nothing goes to the origin.
    private func answer(_ stream: Int32, status: Int, body: String, logged: String?) {
        streams[stream]?.record.status = status
        streams[stream]?.record.upstreamError = logged
        respond(
            stream, status: status, headers: [("content-type", "text/plain; charset=utf-8")], body: Array(body.utf8))
    }

    /// The page-style block: a 403 naming the violations, on every stream.
    private func answerBlocked(_ stream: Int32, _ fields: [HTTP2Field], verdict: Verdict) {
        let url = streams[stream]?.record.url ?? ""
        let accept = fields.values(of: "accept")
        let page = ProxyResponse.blockedPageContent(
            verdict, host: requestOrigin.host, url: url,
            wantsHTML: accept.contains { $0.lowercased().contains("text/html") })
        streams[stream]?.record.status = 403
        respond(stream, status: 403, headers: page.headers, body: page.body)
    }

    private func respond(_ stream: Int32, status: Int, headers: [(String, String)], body: [UInt8]) {
        streams[stream]?.answered = true
        let fields =
            [HTTP2Field(":status", "\(status)")]
            + headers.map { HTTP2Field($0.0.lowercased(), $0.1) }
            + [HTTP2Field("content-length", "\(body.count)")]
        do {
            try deviceSession.submitResponse(fields, on: stream, hasBody: !body.isEmpty)
            body.withUnsafeBytes { deviceSession.send($0, on: stream) }
            deviceSession.finish(stream)
        } catch {
            deviceSession.reset(stream, code: .internalError)
        }
    }

    /// A stream the proxy's library reset before the relay saw a request (a header list over the
    /// limit, a field HTTP/2 forbids): its line says why, with the method and URL when the request's
    /// pseudo-header fields came before the reset (`head`), so `report`, `har` and the live view
    /// count it as the request it was; without them it has neither.
    private func logRefused(_ stream: Int32, head: [HTTP2Field], why: String) {
        requests += 1
        var record = RequestRecord(startedAt: clock.wallMilliseconds, connection: connectionFacts, reused: requests > 1)
        // Both or neither, and only a path that is one: the URL must not name another host.
        if let method = head.value(of: ":method"), let path = head.value(of: ":path"),
            path.utf8.first == UInt8(ascii: "/")
        {
            record.method = method
            record.url = urlPrefix + path
        }
        record.httpVersion = "HTTP/2"
        record.streamID = stream
        record.upstreamError = "bad request: \(why)"
        record.failure = .badRequest
        streams[stream] = RelayedStream(record: record, startedAt: clock.monotonicMilliseconds, twin: .none)
        logStream(stream, error: nil, failure: nil)
    }

    /// Writes a stream's line and forgets it. An error or failure already on the line is kept.
    func logStream(_ stream: Int32, error: String?, failure: Failure?) {
        guard let relayed = streams.removeValue(forKey: stream) else { return }
        var line = relayed.record
        if let error { line.upstreamError = line.upstreamError ?? error }
        if let failure, line.failure == nil { line.failure = failure }
        line.durationMilliseconds = max(0, clock.monotonicMilliseconds - relayed.startedAt)
        line.connection.action = tunnel.findings.action ?? line.connection.action
        // Held for the next write of the drained frames (``drain(_:to:)``): one write for them all.
        owner.environment.logHeld(request: line)
    }
}
