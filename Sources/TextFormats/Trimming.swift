extension StringProtocol {
    /// Without leading and trailing whitespace (`Character.isWhitespace`: spaces, tabs, line ends):
    /// a value read from a line of text.
    package var trimmingWhitespace: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
