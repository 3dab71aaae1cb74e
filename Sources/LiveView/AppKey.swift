import LogRecord

/// Which app the live view counts a line for: the label of the app its User-Agent named
/// (``AppAgent/label``: the app's name, or `other` for browsers and every other agent), or none
/// when the line had no User-Agent.
package enum AppKey: Sendable, Hashable {
    /// An ``AppAgent/label``.
    case agent(String)
    /// The line named no app: no User-Agent (or a line from before the daemon logged `app`).
    case noUserAgent

    /// What the page shows for ``noUserAgent``, and the `?app=` value that selects it. Parentheses
    /// and a space: no token of a User-Agent's product looks like it, so it reads as no app's name.
    package static let noUserAgentText = "(no User-Agent)"

    package init(_ agent: AppAgent?) {
        self = agent.map { .agent($0.label) } ?? .noUserAgent
    }

    /// The app's label, or nil for ``noUserAgent``: the JSON's value, distinct from every name.
    package var label: String? {
        switch self {
        case .agent(let label): label
        case .noUserAgent: nil
        }
    }

    /// The name shown and the `?app=` value that selects it.
    package var text: String { label ?? Self.noUserAgentText }

    /// ``text``, saying what `other` stands for: the heading's and the plist scope's words.
    package var explained: String {
        self == .agent(AppAgent.otherLabel) ? text + " (browsers and agents that name no app)" : text
    }

    /// Whether `?app=query` selects it: the label in any case (`other` selects every agent that is
    /// not an app), or ``noUserAgentText``.
    package func matches(_ query: String) -> Bool {
        text.lowercased() == query.lowercased()
    }

    /// Apps by name in any case, then `other`, then no User-Agent: the order of the page's groups.
    package static func precedes(_ a: AppKey, _ b: AppKey) -> Bool {
        let (x, y) = (a.rank, b.rank)
        guard x == y else { return x < y }
        let (p, q) = (a.text.lowercased(), b.text.lowercased())
        return p != q ? p < q : a.text < b.text
    }

    private var rank: Int {
        switch self {
        case .agent(AppAgent.otherLabel): 1
        case .agent: 0
        case .noUserAgent: 2
        }
    }
}
