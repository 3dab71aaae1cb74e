import CZlib

/// Inflates gzip data as logrotate writes it (`compress` runs gzip): one member or several
/// concatenated, as `cat a.gz b.gz` makes and `gzip -d` accepts.
enum GzipInflater {
    /// What inflating gave: every byte recovered, and why it stopped early, if it did. A rotated log
    /// cut short (a full disk, a copy in progress) still yields the lines before the damage, as a
    /// torn last line of a plain log does.
    struct Result {
        var bytes: [UInt8]
        /// nil when every member ended cleanly.
        var damage: String?
    }

    /// The two bytes every gzip member starts with (RFC 1952).
    static func isGzip(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b
    }

    static func inflate(_ input: [UInt8]) -> Result {
        var output: [UInt8] = []
        output.reserveCapacity(input.count * 8)
        var stream = z_stream()
        // 15 window bits + 16: gzip framing only (header, CRC-32 and length checked by zlib).
        guard inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            return Result(bytes: [], damage: "zlib could not start inflating")
        }
        defer { inflateEnd(&stream) }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var damage: String?
        input.withUnsafeBufferPointer { source in
            stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
            stream.avail_in = UInt32(source.count)
            while true {
                let status = chunk.withUnsafeMutableBufferPointer { buffer -> Int32 in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = UInt32(buffer.count)
                    let status = CZlib.inflate(&stream, Z_NO_FLUSH)
                    output += buffer[0..<(buffer.count - Int(stream.avail_out))]
                    return status
                }
                switch status {
                case Z_OK:
                    continue
                case Z_STREAM_END:
                    // Another member may follow; trailing zero padding (some tools add it) is not one.
                    let rest = Int(stream.avail_in)
                    guard rest > 0 else { return }
                    let offset = source.count - rest
                    if source[offset...].allSatisfy({ $0 == 0 }) { return }
                    guard rest >= 2, source[offset] == 0x1f, source[offset + 1] == 0x8b else {
                        damage = "\(rest) bytes after the end of the compressed data are not gzip"
                        return
                    }
                    inflateReset(&stream)
                case Z_BUF_ERROR where stream.avail_in == 0:
                    damage = "the compressed data ends early (the file is truncated)"
                    return
                default:
                    let reason = stream.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                    damage = "the compressed data is damaged after \(stream.total_in) bytes (\(reason))"
                    return
                }
            }
        }
        return Result(bytes: output, damage: damage)
    }
}
