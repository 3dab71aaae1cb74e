import ATSPolicy
import Testing

/// What a reload reports: the ATS keys added, removed and changed between two versions of a file.
@Suite("Policy key changes between two versions of a policy")
struct PolicyKeyChangesTests {
    static func root(_ body: String) throws -> PropertyListNode {
        let xml = "<?xml version=\"1.0\"?><plist version=\"1.0\">\(body)</plist>"
        return try PropertyListParser.parse(Array(xml.utf8)).root
    }

    static let infoPlist = """
        <dict><key>CFBundleIdentifier</key><string>com.example.app</string>
        <key>NSAppTransportSecurity</key><dict>
          <key>NSExceptionDomains</key><dict>
            <key>legacy.example.com</key><dict><key>NSExceptionMinimumTLSVersion</key><string>TLSv1.0</string></dict>
          </dict>
        </dict></dict>
        """

    @Test("an exception added, a value changed and a key removed are each named by their key path")
    func addedChangedRemoved() throws {
        let before = try Self.root(Self.infoPlist)
        let after = try Self.root(
            """
            <dict><key>CFBundleIdentifier</key><string>com.example.other</string>
            <key>NSAppTransportSecurity</key><dict>
              <key>NSAllowsLocalNetworking</key><true/>
              <key>NSExceptionDomains</key><dict>
                <key>legacy.example.com</key><dict><key>NSExceptionMinimumTLSVersion</key><string>TLSv1.1</string></dict>
              </dict>
            </dict></dict>
            """)
        let changes = PolicyKeyChanges(from: before, to: after)
        #expect(changes.added.map(\.path) == ["NSAllowsLocalNetworking"])
        #expect(
            changes.changed.map(\.path) == ["NSExceptionDomains › legacy.example.com › NSExceptionMinimumTLSVersion"])
        #expect(changes.changed.first?.old == "\"TLSv1.0\"")
        #expect(changes.changed.first?.new == "\"TLSv1.1\"")
        // The Info.plist's other keys (the bundle identifier changed too) are not the policy's.
        #expect(changes.removed.isEmpty)
        #expect(
            changes.lines == [
                "+ NSAllowsLocalNetworking = true",
                "~ NSExceptionDomains › legacy.example.com › NSExceptionMinimumTLSVersion: \"TLSv1.0\" → \"TLSv1.1\"",
            ])

        let back = PolicyKeyChanges(from: after, to: before)
        #expect(back.removed.map(\.path) == ["NSAllowsLocalNetworking"])
    }

    @Test("the same file twice changes nothing; an empty exception dictionary is a key of its own")
    func unchangedAndEmpty() throws {
        let policy = try Self.root(Self.infoPlist)
        #expect(PolicyKeyChanges(from: policy, to: policy).isEmpty)
        let bare = try Self.root("<dict><key>NSExceptionDomains</key><dict><key>a.example</key><dict/></dict></dict>")
        let changes = PolicyKeyChanges(from: nil, to: bare)
        #expect(changes.added.map(\.path) == ["NSExceptionDomains › a.example"])
        #expect(changes.added.first?.new == "{}")
    }
}
