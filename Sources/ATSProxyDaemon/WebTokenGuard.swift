import EventLoop
import ProxyCore
import ProxyWire

/// The web listener's gate: ``WebAccess`` (loopback, or the token) with guesses counted and slowed.
///
/// A wrong token (one given, and not the web token) is counted (``wrongTokens``, in /metrics as
/// `atsproxy_web_token_failures_total`), said on stderr once per burst (the first after a quiet
/// ``window``), and, once an address has made ``limit`` of them within ``window``, every request
/// from it that needs the token is answered 429 with `Retry-After` until that window ends, without
/// the token being looked at: a guesser gets ``limit`` tries a window, whatever its rate. This
/// machine's own requests (``WebAccess/isLocal(_:)``) need no token and are never slowed.
///
/// A value with no clock of its own (the caller passes monotonic milliseconds), so that it is
/// tested without waiting; the web listener keeps it on the main thread.
struct WebTokenGuard {
    /// Wrong tokens from one address within ``window`` after which it is refused without a look.
    static let limit = 10
    /// How long an address's guesses are remembered, and how long a quiet spell ends a burst.
    static let window: Duration = .seconds(60)
    /// The most addresses remembered at once; beyond it those whose window has ended are forgotten
    /// first, then the oldest, so that guesses from many addresses cannot grow the table without end.
    static let maximumAddresses = 4096

    var access: WebAccess
    /// Wrong tokens since start.
    private(set) var wrongTokens = 0
    /// Requests refused without a look at their token, their address having guessed too often.
    private(set) var slowed = 0
    /// Each address with guesses in its window: when the window began, and how many.
    private var guesses: [String: (start: Int64, count: Int)] = [:]
    /// How many addresses' guesses are remembered now.
    var rememberedAddresses: Int { guesses.count }
    /// When the last wrong token came (a burst goes on while they come less than a window apart).
    private var lastWrongToken: Int64?

    init(access: WebAccess) { self.access = access }

    /// What to do with `request` at `now` (monotonic milliseconds), and a line to say on stderr (the
    /// first wrong token of a burst), if any.
    mutating func decide(_ request: LocalRequest, now: Int64) -> (decision: GateDecision, say: String?) {
        if access.isLocal(request) { return (.pass(addHeaders: []), nil) }
        let windowMilliseconds = Self.window.milliseconds
        if access.token != nil, let entry = guesses[request.client], now - entry.start < windowMilliseconds,
            entry.count >= Self.limit
        {
            slowed += 1
            let seconds = max(1, (entry.start + windowMilliseconds - now + 999) / 1000)
            var refusal = LocalResponse.text(
                "\(request.client) gave a wrong web token \(Self.limit) times within \(Self.window.seconds) s: "
                    + "no token is looked at from it for another \(seconds) s\n",
                status: 429, reason: "Too Many Requests")
            refusal.headers.append(("Retry-After", "\(seconds)"))
            return (.refuse(refusal), nil)
        }
        switch access.decide(request) {
        case .admit(let headers): return (.pass(addHeaders: headers), nil)
        case .refuse(let refusal): return (.refuse(refusal), nil)
        case .wrongToken(let refusal):
            return (.refuse(refusal), noteWrongToken(from: request.client, now: now))
        }
    }

    /// Counts a wrong token from `client`; the line to say when it begins a burst.
    private mutating func noteWrongToken(from client: String, now: Int64) -> String? {
        wrongTokens += 1
        let windowMilliseconds = Self.window.milliseconds
        if var entry = guesses[client], now - entry.start < windowMilliseconds {
            entry.count += 1
            guesses[client] = entry
        } else {
            if guesses[client] == nil, guesses.count >= Self.maximumAddresses { forgetOne(now: now) }
            guesses[client] = (now, 1)
        }
        defer { lastWrongToken = now }
        if let last = lastWrongToken, now - last < windowMilliseconds { return nil }
        return "atsproxy: the web listener refused a wrong token from \(client) (each is counted in "
            + "atsproxy_web_token_failures_total; an address is refused without a look for the rest of "
            + "\(Self.window.seconds) s after \(Self.limit) within them; said again after "
            + "\(Self.window.seconds) s without one)"
    }

    /// Forgets the addresses whose window has ended, or else the one whose window began first.
    private mutating func forgetOne(now: Int64) {
        let windowMilliseconds = Self.window.milliseconds
        guesses = guesses.filter { now - $0.value.start < windowMilliseconds }
        guard guesses.count >= Self.maximumAddresses,
            let oldest = guesses.min(by: { $0.value.start < $1.value.start })?.key
        else { return }
        guesses[oldest] = nil
    }
}

extension Duration {
    fileprivate var seconds: Int64 { components.seconds }
}
