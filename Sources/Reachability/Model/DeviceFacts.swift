/// What sysfs says about a link's device: facts the kernel does not put in RTM_NEWLINK.
/// Read once per new link (or rename) by `SysfsReader`; all fields are optional truths.
package struct DeviceFacts: Hashable, Sendable {
    /// `DEVTYPE=` from `/sys/class/net/NAME/uevent` ("wlan", "wwan", "bridge", ...).
    public var deviceType: String?
    /// `/sys/class/net/NAME/phy80211` exists: a mac80211 Wi-Fi device.
    public var hasPhy80211: Bool
    /// Basename of the `/sys/class/net/NAME/device/driver` link ("iwlwifi", "qmi_wwan", ...).
    public var driver: String?

    public init(deviceType: String? = nil, hasPhy80211: Bool = false, driver: String? = nil) {
        self.deviceType = deviceType
        self.hasPhy80211 = hasPhy80211
        self.driver = driver
    }
}

/// The result of classifying one link: its kind and what configuration says about it.
package struct Classification: Hashable, Sendable {
    public var kind: InterfaceKind
    /// Hidden from interface listings and `availableInterfaces` (config `Ignore=yes`).
    public var isIgnored: Bool
    /// Configured as metered: sets `isExpensive` on paths through it.
    public var isMetered: Bool
    /// Configured `Metered=no`: the guesses (a tether, a hotspot layout) do not make it
    /// expensive. A cellular link stays expensive: its kind says so.
    public var isUnmeteredByConfiguration: Bool = false
    /// Configured as constrained (Low Data Mode): sets `isConstrained` on paths through it.
    public var isConstrained: Bool
    /// The connectivity probe may send through it (config `Probe=`, default yes).
    public var allowsProbe: Bool
    /// Overrides the kind's default priority (config).
    public var priority: Int

    public init(
        kind: InterfaceKind, isIgnored: Bool = false, isMetered: Bool = false, allowsProbe: Bool = true, priority: Int? = nil,
        isConstrained: Bool = false
    ) {
        self.isConstrained = isConstrained
        self.kind = kind
        self.isIgnored = isIgnored
        self.isMetered = isMetered
        self.allowsProbe = allowsProbe
        self.priority = priority ?? kind.defaultPriority
    }
}
