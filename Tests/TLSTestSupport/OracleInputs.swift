import Foundation

/// The inputs of the differential oracles (the plist parser's and the JSON parser's against
/// Foundation's): fixture files, and deterministic mutations of them.
package enum OracleInputs {
    /// The repository's root.
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Every regular file directly in `directory` (relative to the repository), sorted by name.
    package static func files(in directory: String) -> [URL] {
        let url = repository.appendingPathComponent(directory)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        return names.sorted().map { url.appendingPathComponent($0) }.filter {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: $0.path, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
    }

    /// `count` variants of `inputs`, the same on every run: a flipped byte, a byte set to one the
    /// format cares about, a truncation, a deleted or a duplicated run of bytes.
    package static func mutations(of inputs: [[UInt8]], count: Int, interesting: [UInt8]) -> [[UInt8]] {
        // A fixed seed: the same mutations on every machine and every run.
        var random = SplitMix64(seed: 0x5EED_0F_0AC1E)
        var result: [[UInt8]] = []
        while result.count < count {
            var bytes = inputs[Int(random.next() % UInt64(inputs.count))]
            guard !bytes.isEmpty else { continue }
            let position = Int(random.next() % UInt64(bytes.count))
            switch random.next() % 5 {
            case 0: bytes[position] ^= UInt8(truncatingIfNeeded: 1 << (random.next() % 8))
            case 1: bytes[position] = interesting[Int(random.next() % UInt64(interesting.count))]
            case 2: bytes.removeSubrange(position...)
            case 3: bytes.removeSubrange(position..<min(bytes.count, position + 1 + Int(random.next() % 16)))
            default:
                bytes.insert(
                    contentsOf: bytes[position..<min(bytes.count, position + 1 + Int(random.next() % 16))], at: position
                )
            }
            result.append(bytes)
        }
        return result
    }
}

extension NSNumber {
    /// Whether Foundation made this number from a boolean (JSON's `true`), which bridges to Bool
    /// and Int alike: only its class tells.
    package var isBoolean: Bool { String(describing: type(of: self)) == "__NSCFBoolean" }
    /// Whether it holds a floating-point value (`d` or `f`), not an integer.
    package var isReal: Bool { ["d", "f"].contains(String(cString: objCType)) }
}
