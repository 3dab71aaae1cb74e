import TrafficReport

/// Skipped lines and damaged compressed files, on stderr, as `report` and `har` print them: the
/// command goes on without them.
func warnAboutSkipped(_ skipped: [LogCollection.SkippedLine], files: [LogCollection.FileSummary], to output: Output) {
    for file in files {
        if let damage = file.damage {
            output.error("atsproxyctl: warning: \(file.path): \(damage); the lines before it are read")
        }
    }
    let shown = 10
    for line in skipped.prefix(shown) {
        output.error("atsproxyctl: warning: \(line); line skipped")
    }
    if skipped.count > shown {
        output.error("atsproxyctl: warning: \(skipped.count - shown) more lines skipped")
    }
}
