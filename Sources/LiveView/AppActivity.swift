import LogRecord

/// What the live view counted of one app (``AppKey``): its loads, and the iOS versions its
/// User-Agents implied, at most a few of them.
package struct AppActivity: Sendable, Equatable {
    /// Connection lines that were loads (`LoggedConnection.isLoad`).
    package private(set) var connections = 0
    /// Request lines (not `tls_stream` ones).
    package private(set) var requests = 0
    /// In first-seen order, at most ``maximumIOSVersions``.
    package private(set) var iOSVersions: [String] = []

    /// A device runs one iOS; a few versions are a test pass across devices, more are noise.
    static let maximumIOSVersions = 4

    init() {}

    mutating func noteConnection(_ agent: AppAgent?) {
        connections += 1
        note(agent)
    }

    mutating func noteRequest(_ agent: AppAgent?) {
        requests += 1
        note(agent)
    }

    private mutating func note(_ agent: AppAgent?) {
        guard case .app(let release)? = agent, let iOS = release.iOS, !iOSVersions.contains(iOS),
            iOSVersions.count < Self.maximumIOSVersions
        else { return }
        iOSVersions.append(iOS)
    }
}
