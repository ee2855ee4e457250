import CSystemd

/// This host's secret for naming networks: /etc/machine-id hashed for reachd alone
/// (`sd_id128_get_machine_app_specific`, an HMAC-SHA256 keyed by the machine ID), so the
/// machine ID itself is never used or revealed, and every process of the host gets the same key.
package enum HostKey {
    /// reachd's application ID for network names (any fixed 128 bits; changing it renames every
    /// network).
    package static let application = sd_id128_t(bytes: (
        0x5e, 0x1c, 0x7a, 0x0d, 0x3b, 0x94, 0x4f, 0x2e, 0xa6, 0x81, 0x0b, 0x57, 0xc3, 0xde, 0x69, 0x12))

    /// The key's two halves; nil when the machine ID cannot be read (a container without one).
    public static func networkKey() -> (UInt64, UInt64)? {
        var derived = sd_id128_t()
        guard sd_id128_get_machine_app_specific(application, &derived) >= 0 else { return nil }
        return (derived.qwords.0, derived.qwords.1)
    }
}
