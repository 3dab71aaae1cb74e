/// Whether a cipher suite, version, group, signature algorithm or extension value is one of
/// the reserved GREASE values (RFC 8701 §2): 0x0A0A, 0x1A1A, … 0xFAFA.
///
/// Clients such as Chrome sprinkle these into their hellos so that servers which choke on
/// unknown values are found early; they never mean anything and a server never selects one.
/// The scanner keeps them in the lists it reports (they help fingerprint a client); use this to
/// filter them out.
package func isGREASE(_ value: UInt16) -> Bool {
    value & 0x0F0F == 0x0A0A && value >> 8 == value & 0x00FF
}
