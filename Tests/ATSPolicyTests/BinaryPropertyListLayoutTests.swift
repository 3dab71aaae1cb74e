import ATSPolicy
import Foundation
import Testing

/// A binary plist's sections must tile the file exactly, as CoreFoundation requires: header,
/// objects, offset table, trailer. Found by PropertyListOracleTests: a byte inserted among the
/// objects shifted every offset, and we read a different tree (a string root, say) where
/// Foundation and iOS refuse the file.
@Suite("binary plist layout")
struct BinaryPropertyListLayoutTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/mistakes/cancelled-web-content.bplist")

    /// Each case: where to insert a byte, from the start (among the objects) or, when negative,
    /// from the end (-32: between the offset table and the trailer).
    @Test("a byte inserted among the objects or after the offset table is refused", arguments: [9, 104, -32])
    func inserted(at position: Int) throws {
        var bytes = Array(try Data(contentsOf: Self.fixture))
        #expect(throws: Never.self) { try PropertyListParser.parse(bytes) }
        let index = position >= 0 ? position : bytes.count + position
        bytes.insert(0x61, at: index)
        #expect(throws: PropertyListError.self) { try PropertyListParser.parse(bytes) }
    }
}
