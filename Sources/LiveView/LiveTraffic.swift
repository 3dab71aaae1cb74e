/// What the live view has gathered from the daemon's log lines (being written).
public struct LiveTraffic { public init() {} }
