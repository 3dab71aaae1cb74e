import Glibc
import POSIX

extension FuzzDriver {
    /// `path` itself, or the regular files directly in it when it is a directory, sorted.
    static func files(at path: String) -> [String] {
        guard let directory = opendir(path) else { return [path] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != "..", entry.pointee.d_type == UInt8(DT_REG) { names.append(path + "/" + name) }
        }
        return names.sorted()
    }

    /// The whole file, or nil when it cannot be read.
    static func read(_ path: String) -> [UInt8]? {
        try? FileContents.read(path, maximumSize: .max).bytes
    }
}
