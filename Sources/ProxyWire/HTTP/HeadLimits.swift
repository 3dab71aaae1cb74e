/// How much of a message head the parsers accept before giving up.
///
/// Both limits exist so a client (or an origin) cannot make the proxy hold unbounded memory
/// while it waits for the empty line that ends a head.
package struct HeadLimits: Sendable, Equatable {
    /// Every byte of the head counts: leading empty lines, the start line, each field line and
    /// the line ends, up to and including the empty line that ends the head.
    package var maximumHeadBytes: Int
    /// Field lines, not counting the start line or the final empty line.
    package var maximumHeaderLines: Int

    package init(maximumHeadBytes: Int = 16_384, maximumHeaderLines: Int = 100) {
        self.maximumHeadBytes = maximumHeadBytes
        self.maximumHeaderLines = maximumHeaderLines
    }
}
