/// A network interface as the kernel reports it in RTM_NEWLINK (the facts, nothing derived).
package struct Link: Hashable, Sendable {
    public var index: Int32
    public var name: String
    public var flags: LinkFlags
    /// `ARPHRD_*` from `ifinfomsg.ifi_type`.
    public var hardwareType: UInt16
    public var operState: OperState
    /// `IFLA_INFO_KIND` ("veth", "bridge", "tun", "wireguard", ...), nil for physical devices.
    public var infoKind: String?
    /// `IFLA_MASTER`: the bridge or bond this link is a port of.
    public var master: Int32?

    public init(
        index: Int32, name: String, flags: LinkFlags, hardwareType: UInt16 = 1,
        operState: OperState = .unknown, infoKind: String? = nil, master: Int32? = nil
    ) {
        self.index = index
        self.name = name
        self.flags = flags
        self.hardwareType = hardwareType
        self.operState = operState
        self.infoKind = infoKind
        self.master = master
    }

    public static let hardwareEther: UInt16 = 1
    public static let hardwarePPP: UInt16 = 512
    public static let hardwareLoopback: UInt16 = 772
    public static let hardwareNone: UInt16 = 0xFFFE
    public static let hardwareRawIP: UInt16 = 519

    /// Administratively up (`ip link set X up`).
    public var isAdminUp: Bool { flags.contains(.up) }
    public var isLoopback: Bool { flags.contains(.loopback) || hardwareType == Self.hardwareLoopback }

    /// Up with carrier, and not dormant: packets can leave through it now.
    /// RFC 2863 operstate "unknown" counts as up: tun devices and many drivers never report more.
    public var isReady: Bool {
        guard isAdminUp else { return false }
        switch operState {
        case .up: return true
        case .unknown: return flags.contains(.lowerUp) || isLoopback
        case .notPresent, .down, .lowerLayerDown, .testing, .dormant: return false
        }
    }
}

/// RFC 2863 operational state, `IFLA_OPERSTATE`.
package enum OperState: UInt8, Sendable, Hashable {
    case unknown = 0, notPresent = 1, down = 2, lowerLayerDown = 3, testing = 4, dormant = 5, up = 6
}
