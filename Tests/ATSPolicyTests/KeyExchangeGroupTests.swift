import ATSPolicy
import Testing
import TextFormats

/// Key-exchange groups by the IANA TLS Supported Groups registry: the names the log, HAR and
/// `diagnose` print, and the numbers a reader matches.
@Suite("Key-exchange groups")
struct KeyExchangeGroupTests {
    @Test(
        "each group by the registry's name and codepoint",
        arguments: [
            (KeyExchangeGroup.x25519, "x25519", 29, false),
            (.secp256r1, "secp256r1", 23, false),
            (.secp384r1, "secp384r1", 24, false),
            (.x25519MLKEM768, "X25519MLKEM768", 4588, true),
            (.secP256r1MLKEM768, "SecP256r1MLKEM768", 4587, true),
            (.secP384r1MLKEM1024, "SecP384r1MLKEM1024", 4589, true),
            (KeyExchangeGroup(codepoint: 0x0100), "ffdhe2048", 256, false),
            (KeyExchangeGroup(codepoint: 0x11EE), "0x11EE", 4590, false),
        ])
    func named(_ group: KeyExchangeGroup, _ name: String, _ codepoint: UInt16, _ postQuantum: Bool) {
        #expect(group.name == name)
        #expect(group.codepoint == codepoint)
        #expect(group.isPostQuantum == postQuantum)
        // Read back from its name as written, in any case.
        #expect(KeyExchangeGroup(name: name) == group)
        #expect(KeyExchangeGroup(name: name.uppercased()) == group)
        #expect(group.json.serialized == #"{"name":"\#(name)","codepoint":\#(codepoint)}"#)
    }

    @Test("a name the registry does not have is no group")
    func unknownName() {
        #expect(KeyExchangeGroup(name: "P-256") == nil)
        #expect(KeyExchangeGroup(name: "") == nil)
    }
}
