import POSIX

extension DaemonConfiguration {
    /// The largest token file read: a token is a line; anything bigger is the wrong file.
    static let maximumTokenFileSize = 4096

    /// Reads the web token from `web-token-file`, when one is given: its first line, trimmed of
    /// spaces and newlines and held to the rule of `web-token`. Called at start and on every reload
    /// (an edited file keeps its name), apart from resolving the settings, as the hosts file is.
    ///
    /// - Throws: a ``ConfigurationError`` naming the file when it cannot be read, is empty, or
    ///   holds no usable token.
    mutating func readWebTokenFile() throws(ConfigurationError) {
        guard let path = webTokenFile else { return }
        let origin = origins[.webTokenFile] ?? .commandLine
        let key = ConfigKey.webTokenFile.name
        let contents: FileContents
        do { contents = try FileContents.read(path, maximumSize: Self.maximumTokenFileSize) } catch {
            throw ConfigurationError(.unusableFile, origin: origin, key: key, reason: "\(error)")
        }
        let firstLine = contents.bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).first
        let text = String(decoding: firstLine ?? [], as: UTF8.self).trimmingWhitespace
        guard !text.isEmpty else {
            throw ConfigurationError(
                .unusableFile, origin: origin, key: key,
                reason:
                    "\(path): the file is empty: write the token in it (for example: openssl rand -hex 16 > \(path))")
        }
        do { webToken = try SettingValue.webToken(text) } catch {
            throw ConfigurationError(
                .unusableFile, origin: origin, key: key, reason: "\(path): not a usable token: \(error.reason)")
        }
    }
}

extension String {
    /// Without the spaces, tabs and carriage returns around it (a token file written by an editor).
    fileprivate var trimmingWhitespace: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
