import EventLoop

extension Duration {
    /// Seconds as a person reads them in a log line: `300 s`, `0.5 s`.
    var logText: String {
        let milliseconds = self.milliseconds
        if milliseconds % 1000 == 0 { return "\(milliseconds / 1000) s" }
        return "\(Double(milliseconds) / 1000) s"
    }
}
