import Glibc

/// An endless stream of seeded random bytes, the same for sender and receiver, to check that a
/// transfer of any length arrives byte-exact without storing it: a random block of a prime length
/// repeated, so no chunk size a relay uses lines up with it (a lost, repeated or reordered chunk
/// shows as a mismatch).
package struct BytePattern: Sendable {
    private let block: [UInt8]

    package init(seed: UInt64 = 0x5EED, period: Int = 1_048_573) {
        var generator = SplitMix64(seed: seed)
        var block = [UInt8](repeating: 0, count: period)
        for index in stride(from: 0, to: period, by: 8) {
            let word = generator.next()
            for byte in 0..<min(8, period - index) {
                block[index + byte] = UInt8(truncatingIfNeeded: word >> (8 * byte))
            }
        }
        self.block = block
    }

    /// The `count` bytes at `offset` into the stream (at most one period at a time is cheap: it is a slice).
    package func bytes(at offset: Int, count: Int) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(count)
        var position = offset % block.count
        while result.count < count {
            let take = min(count - result.count, block.count - position)
            result += block[position..<(position + take)]
            position = 0
        }
        return result
    }

    /// Whether `chunk` is the stream's bytes at `offset`.
    package func matches(_ chunk: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        var checked = 0
        var position = offset % block.count
        return block.withUnsafeBytes { pattern in
            while checked < chunk.count {
                let take = min(chunk.count - checked, block.count - position)
                guard memcmp(chunk.baseAddress! + checked, pattern.baseAddress! + position, take) == 0 else {
                    return false
                }
                checked += take
                position = 0
            }
            return true
        }
    }

    /// Sends `count` bytes of the stream from offset 0, calling `sent` with the running total after
    /// each send; false when the peer went away first.
    @discardableResult
    package func send(_ count: Int, to descriptor: Int32, sent: (Int) -> Void = { _ in }) -> Bool {
        var offset = 0
        while offset < count {
            let chunk = bytes(at: offset, count: min(65_536, count - offset))
            guard sendAll(descriptor, chunk) else { return false }
            offset += chunk.count
            sent(offset)
        }
        return true
    }

    /// Receives exactly `count` bytes and checks them against the stream from `offset` (within
    /// `wait` seconds): the number of bytes that arrived and matched, stopping at the first mismatch,
    /// the peer's close or the deadline.
    package func receive(_ count: Int, from descriptor: Int32, startingAt offset: Int = 0, wait: Double = 30) -> Int {
        var received = 0
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let deadline = MonotonicDeadline(seconds: wait)
        while received < count {
            guard poll(&entry, 1, deadline.millisecondsLeft) > 0 else { return received }
            let got = buffer.withUnsafeMutableBytes {
                recv(descriptor, $0.baseAddress, min($0.count, count - received), 0)
            }
            guard got > 0 else { return received }
            let good = buffer.withUnsafeBytes {
                matches(UnsafeRawBufferPointer(rebasing: $0[0..<got]), at: offset + received)
            }
            guard good else { return received }
            received += got
        }
        return received
    }
}

/// A deadline on the monotonic clock, for poll()'s timeout.
struct MonotonicDeadline {
    private let end: Double

    init(seconds: Double) { end = MonotonicDeadline.now() + seconds }

    var millisecondsLeft: Int32 { Int32(max(0, min(Double(Int32.max), (end - MonotonicDeadline.now()) * 1000))) }

    private static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
