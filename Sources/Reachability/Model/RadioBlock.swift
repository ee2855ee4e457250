/// How a link's radio is switched off (rfkill): by software (`rfkill block`, airplane mode in a
/// desktop) or by hardware (a switch or key the driver reports), or both. Empty: the radio is on.
package struct RadioBlock: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Soft-blocked: software can switch it back on.
    public static let soft = RadioBlock(rawValue: 1 << 0)
    /// Hard-blocked: only the switch or key that did it can.
    public static let hard = RadioBlock(rawValue: 1 << 1)
}
