/// The name the proxy answers as itself, through the proxy (`http://atsproxy.test/`, and `https://`
/// through CONNECT with a minted leaf): `.test` is reserved (RFC 6761 §6.2), so it can never be a
/// real site, and a browser passes it to its proxy like any other name.
package enum OnboardingHost {
    package static let name = "atsproxy.test"
}

/// A request the proxy answers itself (its onboarding pages, PAC file, CA downloads, live view and
/// metrics), as the site that answers it sees it: no socket, no parser state.
package struct LocalRequest: Sendable {
    /// How the request reached the proxy: what the onboarding page's "you are connected" step and
    /// the web listener's token check depend on.
    package enum Arrival: Sendable, Equatable {
        /// Through the proxy, for the onboarding host (`GET http://atsproxy.test/`, or inside a
        /// CONNECT to it when `secure`): the device really is using the proxy.
        case proxied(secure: Bool)
        /// Sent to the proxy's listening address as to a web server (`http://192.168.1.20:8080/`
        /// typed into a browser; `secure` for TLS straight to the listener): the device can reach
        /// the proxy, but is not (yet) using it.
        case direct(secure: Bool)
        /// To the web listener (`--web-listen`): the live view and the metrics.
        case web
    }

    package var method: String
    /// The path, percent-decoding left to the site; always starts with "/".
    package var path: String
    /// The query's name=value pairs in order, percent- and plus-decoded.
    package var query: [(name: String, value: String)]
    package var headers: HTTPHeaders
    /// The client's address as the proxy saw it (no port).
    package var client: String
    package var arrival: Arrival
    /// The proxy's listener the request arrived on, as "address:port" (the web listener's own for `.web`).
    package var listener: String

    package init(
        method: String, path: String, query: [(name: String, value: String)] = [], headers: HTTPHeaders = HTTPHeaders(),
        client: String, arrival: Arrival, listener: String
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.client = client
        self.arrival = arrival
        self.listener = listener
    }

    /// Splits a target's "/path?query" into the path and decoded query pairs.
    package init(
        method: String, pathAndQuery: String, headers: HTTPHeaders = HTTPHeaders(), client: String, arrival: Arrival,
        listener: String
    ) {
        let parts = pathAndQuery.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts.first.map(String.init) ?? "/"
        let query = parts.count > 1 ? Self.decodeQuery(String(parts[1])) : []
        self.init(
            method: method, path: path.isEmpty ? "/" : path, query: query, headers: headers, client: client,
            arrival: arrival,
            listener: listener)
    }

    /// The first value of the query parameter `name`.
    package func queryValue(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// `application/x-www-form-urlencoded` pairs: `+` is a space, `%XX` a byte (invalid escapes kept
    /// as written; invalid UTF-8 repaired).
    package static func decodeQuery(_ query: String) -> [(name: String, value: String)] {
        query.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (percentDecoded(parts[0]), parts.count > 1 ? percentDecoded(parts[1]) : "")
        }
    }

    package static func percentDecoded(_ text: some StringProtocol) -> String {
        var bytes: [UInt8] = []
        var input = Array(text.utf8)[...]
        while let byte = input.popFirst() {
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), input.count >= 2, let high = hexValue(input[input.startIndex]),
                let low = hexValue(input[input.startIndex + 1])
            {
                bytes.append(high << 4 | low)
                input = input.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// The proxy's own complete answer to a ``LocalRequest``: status, fields and body. The serving
/// connection adds Content-Length, Date-free framing and Connection.
package struct LocalResponse: Sendable {
    package var status: Int
    package var reason: String
    /// Fields besides Content-Length and Connection, which ``serialized(headOnly:keepAlive:)`` writes.
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]

    package init(
        status: Int = 200, reason: String = "OK", headers: [(name: String, value: String)] = [], body: [UInt8] = []
    ) {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
    }

    /// A response of `contentType` (never cached: the pages show live state and the CA may change).
    package init(
        status: Int = 200, reason: String = "OK", contentType: String, body: [UInt8],
        headers: [(name: String, value: String)] = []
    ) {
        self.init(
            status: status, reason: reason,
            headers: [("Content-Type", contentType), ("Cache-Control", "no-store")] + headers, body: body)
    }

    package static func html(_ page: String, status: Int = 200, reason: String = "OK") -> LocalResponse {
        LocalResponse(status: status, reason: reason, contentType: "text/html; charset=utf-8", body: Array(page.utf8))
    }

    package static func text(_ text: String, status: Int = 200, reason: String = "OK") -> LocalResponse {
        LocalResponse(status: status, reason: reason, contentType: "text/plain; charset=utf-8", body: Array(text.utf8))
    }

    package static func json(_ text: String, status: Int = 200, reason: String = "OK") -> LocalResponse {
        LocalResponse(status: status, reason: reason, contentType: "application/json", body: Array(text.utf8))
    }

    package static func notFound(_ path: String) -> LocalResponse {
        .text("atsproxy has no page at \(path)\n", status: 404, reason: "Not Found")
    }

    /// 405 with the methods the site answers.
    package static func methodNotAllowed(_ method: String) -> LocalResponse {
        var response = LocalResponse.text(
            "atsproxy's pages answer GET and HEAD, not \(method)\n", status: 405, reason: "Method Not Allowed")
        response.headers.append(("Allow", "GET, HEAD"))
        return response
    }

    /// The first value of field `name` (case-insensitive).
    package func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The response as bytes: status line, fields, Content-Length, Connection, then the body
    /// (left out for a HEAD request, whose Content-Length still says what a GET would get).
    package func serialized(headOnly: Bool = false, keepAlive: Bool) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(reason)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(body.count)\r\nConnection: \(keepAlive ? "keep-alive" : "close")\r\n\r\n"
        return Array(head.utf8) + (headOnly ? [] : body)
    }
}

/// What a local site gives back: a whole response, or (the live view's updates) a stream of
/// server-sent events that stays open.
package enum LocalReply: Sendable {
    case response(LocalResponse)
    /// `text/event-stream`: the connection stays open and `channel`'s events are written as they
    /// come; `retry` tells the browser how soon to reconnect after a drop.
    case eventStream(channel: String, retryMilliseconds: Int)
}

/// Answers the proxy's own requests. Called on the loop that serves the connection: it must not
/// block. A site shared by the proxy loops (the onboarding pages) is also `Sendable`; the live view
/// belongs to the web listener's loop alone.
package protocol LocalSite {
    func reply(to request: LocalRequest) -> LocalReply
}
