/// What a refused request head had shown before its fault: the method and target of a request line
/// read whole, when the fault came after it (a header field, the head's size limit, a second Host).
/// The refused request's log line names them, so `report`, `har` and the live view count it as the
/// request it was. A request line that is itself at fault shows nothing (``RequestHeadParser``
/// gives nil).
package struct RefusedRequestLine: Sendable, Hashable {
    /// As the line had it (case-sensitive).
    package let method: String
    /// Parsed as a complete head's would be; origin-form made absolute with the parser's origin
    /// and host, since the Host field may be what was at fault.
    package let target: RequestTarget
    /// Whether the target was origin-form (``RequestHead/arrivedInOriginForm``).
    package let arrivedInOriginForm: Bool
    /// 1.0 or 1.1: the line was read whole.
    package let version: HTTPVersion

    /// The line's method and parsed target; nil when the target does not parse as a complete head's
    /// would.
    init?(line: RequestLine, origin: RequestOrigin?) {
        method = line.method
        version = line.version
        if let origin, RequestHead.takesOriginForm(line, origin: origin) {
            guard let target = try? RequestTargetParser.parseOriginForm(line.target, origin: origin, host: nil) else {
                return nil
            }
            self.target = target
            arrivedInOriginForm = true
        } else {
            guard let target = try? RequestTargetParser.parse(method: line.method, target: line.target) else {
                return nil
            }
            self.target = target
            arrivedInOriginForm = false
        }
    }
}
