import ProxyCore
import ProxyWire
import Testing

@testable import ATSProxyDaemon

/// The web listener's token rule without a process: the Bearer scheme in any case, wrong tokens
/// told from missing ones, counted, said once per burst, and an address refused without a look
/// after ``WebTokenGuard/limit`` of them within ``WebTokenGuard/window``.
@Suite struct WebTokenGuardTests {
    static let token = "0123456789abcdef0123456789abcdef"

    /// A request from `client` that names another site (so loopback needs the token too).
    static func request(
        from client: String = "10.0.0.2", authorization: String? = nil, query: String? = nil
    ) -> LocalRequest {
        var fields: [(name: String, value: String)] = [("Host", "proxy.example")]
        if let authorization { fields.append(("Authorization", authorization)) }
        return LocalRequest(
            method: "GET", path: "/metrics", query: query.map { [("token", $0)] } ?? [], headers: HTTPHeaders(fields),
            client: client, arrival: .web, listener: "10.0.0.1:8081")
    }

    static func status(_ decision: GateDecision) -> Int {
        switch decision {
        case .pass: 200
        case .refuse(let response): response.status
        }
    }

    @Test(
        "the Bearer scheme is matched in any case, after one or more spaces",
        arguments: ["Bearer", "bearer", "BEARER", "bEaReR"])
    func bearerAnyCase(scheme: String) {
        let access = WebAccess(token: Self.token)
        for spaces in [" ", "   "] {
            guard case .admit = access.decide(Self.request(authorization: scheme + spaces + Self.token)) else {
                Issue.record("\(scheme)\(spaces)TOKEN refused")
                continue
            }
        }
    }

    @Test("another scheme, or Bearer with no token, is no token given; a wrong one is a wrong token")
    func bearerShapes() {
        let access = WebAccess(token: Self.token)
        for value in ["Basic \(Self.token)", "Bearer", "Bearer ", "Bearer\(Self.token)"] {
            guard case .refuse = access.decide(Self.request(authorization: value)) else {
                Issue.record("\(value): not a plain refusal")
                continue
            }
        }
        guard case .wrongToken = access.decide(Self.request(authorization: "bearer wrong-token-of-some-size")) else {
            Issue.record("a wrong bearer token is not told apart")
            return
        }
        guard case .wrongToken = access.decide(Self.request(query: "nope")) else {
            Issue.record("a wrong ?token= is not told apart")
            return
        }
    }

    @Test("wrong tokens are counted, said once per burst, and after 10 in a minute the address gets 429 unlooked")
    func slowedAfterRepeatedGuesses() throws {
        var gate = WebTokenGuard(access: WebAccess(token: Self.token))
        var said: [String] = []
        var now: Int64 = 1_000_000
        for _ in 0..<WebTokenGuard.limit {
            let (decision, line) = gate.decide(Self.request(authorization: "Bearer wrong"), now: now)
            #expect(Self.status(decision) == 401)
            if let line { said.append(line) }
            now += 100
        }
        #expect(gate.wrongTokens == WebTokenGuard.limit)
        #expect(said.count == 1, "\(said)")
        #expect(said.first?.contains("10.0.0.2") == true)
        // Now even the right token is not looked at from that address...
        let (refused, _) = gate.decide(Self.request(authorization: "Bearer " + Self.token), now: now)
        guard case .refuse(let response) = refused else {
            Issue.record("the right token got in from a slowed address")
            return
        }
        #expect(response.status == 429)
        let retry = try #require(response.headers.first { $0.name == "Retry-After" }?.value)
        #expect(Int(retry).map { (1...60).contains($0) } == true, "Retry-After: \(retry)")
        #expect(String(decoding: response.body, as: UTF8.self).contains("10 times within 60 s"))
        #expect(gate.slowed == 1)
        // ...while another address is, and this machine's own requests need no token at all.
        #expect(
            Self.status(gate.decide(Self.request(from: "10.0.0.3", authorization: "bearer " + Self.token), now: now).0)
                == 200)
        let local = LocalRequest(
            method: "GET", path: "/", headers: HTTPHeaders([("Host", "127.0.0.1:8081")]), client: "127.0.0.1",
            arrival: .web, listener: "127.0.0.1:8081")
        #expect(Self.status(gate.decide(local, now: now).0) == 200)
        // Once the window is over, the address's token is looked at again.
        now += 60_000
        #expect(Self.status(gate.decide(Self.request(authorization: "Bearer " + Self.token), now: now).0) == 200)
        // A wrong token after a quiet window begins a new burst, said again.
        let (_, again) = gate.decide(Self.request(authorization: "Bearer wrong"), now: now + 1)
        #expect(again != nil)
    }

    @Test("a missing token is neither counted nor slowed")
    func missingTokenIsNoGuess() {
        var gate = WebTokenGuard(access: WebAccess(token: Self.token))
        for step in 0..<(WebTokenGuard.limit * 2) {
            let (decision, line) = gate.decide(Self.request(), now: Int64(step))
            #expect(Self.status(decision) == 401)
            #expect(line == nil)
        }
        #expect(gate.wrongTokens == 0)
        #expect(Self.status(gate.decide(Self.request(authorization: "Bearer " + Self.token), now: 100).0) == 200)
    }

    @Test("guesses from more addresses than the table holds forget the oldest, not grow it")
    func tableIsBounded() {
        var gate = WebTokenGuard(access: WebAccess(token: Self.token))
        for index in 0...(WebTokenGuard.maximumAddresses + 10) {
            _ = gate.decide(Self.request(from: "10.1.\(index / 256).\(index % 256)", query: "x"), now: Int64(index))
        }
        #expect(gate.rememberedAddresses <= WebTokenGuard.maximumAddresses)
    }
}
