/// Decides what kind of network a link is, and what configuration says about it.
///
/// A pure function of the kernel's facts (`Link`), sysfs facts (`DeviceFacts`) and the configuration:
/// no I/O. Configuration rules come first; then the kind is read from the most specific fact the kernel
/// offers down to the vaguest (`kindSteps`), and the first step with an answer wins.
package struct Classifier: Sendable {
    /// Config rules in file order: for each property, the first matching rule that sets it wins.
    public var rules: [InterfaceRule]
    /// Config priorities per kind, replacing `InterfaceKind.defaultPriority`.
    public var priorities: [InterfaceKind: Int]
    /// `[Network]` rules by the network's name: applied by the Engine over the link's
    /// classification while the link reaches that network (`NetworkState.networkID(of:)`).
    public var networks: [String: NetworkRule]

    public init(rules: [InterfaceRule] = [], priorities: [InterfaceKind: Int] = [:], networks: [NetworkRule] = []) {
        self.rules = rules
        self.priorities = priorities
        self.networks = Dictionary(networks.map { ($0.id, $0) }) { first, _ in first }
    }

    public func classify(_ link: Link, device: DeviceFacts) -> Classification {
        var kind: InterfaceKind?
        var ignore: Bool?
        var metered: Bool?
        var constrained: Bool?
        var probe: Bool?
        var priority: Int?
        for rule in rules where rule.matches(link.name) {
            kind = kind ?? rule.kind
            ignore = ignore ?? rule.ignore
            metered = metered ?? rule.metered
            constrained = constrained ?? rule.constrained
            probe = probe ?? rule.probe
            priority = priority ?? rule.priority
        }
        // A kind from a rule wins over every fact: the administrator knows what the cable is.
        let resolved = kind ?? Self.detectKind(link, device: device).kind
        var classification = Classification(
            kind: resolved,
            isIgnored: ignore ?? false,
            // Only configuration sets isMetered; the facts that make a link expensive without it
            // (cellular, a tether, a hotspot) are the Engine's (`NetworkState.expensiveReason`).
            isMetered: metered ?? false,
            allowsProbe: probe ?? true,
            priority: priority ?? priorities[resolved] ?? resolved.defaultPriority,
            isConstrained: constrained ?? false
        )
        classification.isUnmeteredByConfiguration = metered == false
        return classification
    }

    /// Drivers only phones drive for USB tethering: Apple's (iPhone, iPad) and RNDIS, which
    /// Android's USB tethering speaks. cdc_ncm and cdc_ether are absent: most USB Ethernet
    /// adapters and docks use them too, so the driver alone says nothing.
    public static let tetherDrivers: Set<String> = ["ipheth", "rndis_host"]
}

// MARK: - Kind detection

extension Classifier {
    /// One row of the detection table: a name for tests and logs, and a decision or nil to fall through.
    package struct KindStep: Sendable {
        package let name: String
        package let decide: @Sendable (Link, DeviceFacts) -> InterfaceKind?
    }

    /// The detection order after the configuration's rules (docs/semantics.md,
    /// Kinds); the first step with an answer wins.
    package static let kindSteps: [KindStep] = [
        KindStep(name: "infoKind") { link, device in kindFromInfoKind(link, device) },
        KindStep(name: "hardwareType") { link, device in kindFromHardwareType(link, device) },
        KindStep(name: "deviceType") { _, device in kindFromDeviceType(device) },
        KindStep(name: "phy80211") { _, device in kindFromPhy80211(device) },
        KindStep(name: "driver") { _, device in kindFromDriver(device) },
        KindStep(name: "name") { link, _ in kindFromName(link) },
        KindStep(name: "ethernet") { link, _ in kindFromEthernet(link) },
    ]

    /// The kind the facts give, and which step of `kindSteps` decided it ("fallback" when none did).
    package static func detectKind(_ link: Link, device: DeviceFacts) -> (kind: InterfaceKind, step: String) {
        for step in kindSteps {
            if let kind = step.decide(link, device) { return (kind, step.name) }
        }
        return (.other, "fallback")
    }

    /// Whether sysfs facts (DEVTYPE, phy80211, driver) could change how `link` is classified.
    /// A software link whose info kind decides on its own needs none: reading them for thousands
    /// of container veths would be half the cost of an initial sync for nothing.
    public static func needsDeviceFacts(_ link: Link) -> Bool {
        kindFromInfoKind(link, DeviceFacts(deviceType: "probe")) == nil
            || kindFromInfoKind(link, DeviceFacts()) != kindFromInfoKind(link, DeviceFacts(deviceType: "wlan"))
    }

    /// `IFLA_INFO_KIND`: the kernel driver that created a software link says exactly what it is, so it
    /// outranks every hint (a veth named `wlan0` inside a container is still a veth).
    package static func kindFromInfoKind(_ link: Link, _ device: DeviceFacts) -> InterfaceKind? {
        guard let infoKind = link.infoKind else { return nil }
        switch infoKind {
        case "veth":
            return .virtual
        case "bridge":
            return .bridge
        case "tun":
            // One driver, two devices: a tap (ARPHRD_ETHER) is a VM's or container's NIC; a tun (IP
            // packets, ARPHRD_NONE) is what VPN clients such as OpenVPN and OpenConnect hold open.
            return link.hardwareType == Link.hardwareEther ? .virtual : .vpn
        case "wireguard", "ipip", "gre", "gretap", "ip6gre", "ip6gretap", "sit", "ip6tnl", "vti", "vti6",
             "ipsec", "xfrm", "openvpn", "ovpn":
            // Tunnels: traffic leaves wrapped through some other link.
            return .vpn
        case "wwan", "rmnet":
            // The wwan subsystem's links and Qualcomm's rmnet data channels are modem data paths.
            return .cellular
        case "vxlan", "geneve", "macvlan", "macvtap", "ipvlan", "ipvtap", "dummy", "ifb", "vcan", "nlmon",
             "netkit", "vrf":
            // Overlays, container plumbing and test devices: never a network of their own.
            return .virtual
        case "bond", "team":
            // Aggregates of (almost always) Ethernet ports.
            return .wired
        case "vlan", "macsec":
            // Carried on a parent link, usually Ethernet; a DEVTYPE that names a radio still wins.
            return kindFromDeviceType(device) ?? .wired
        default:
            // An info kind we do not know: let the other facts decide.
            return nil
        }
    }

    /// `ARPHRD_*`: decisive for loopback; PPP and headerless IP links need hints to tell a modem from a
    /// PPPoE session or some other point-to-point link.
    package static func kindFromHardwareType(_ link: Link, _ device: DeviceFacts) -> InterfaceKind? {
        if link.isLoopback { return .loopback }
        switch link.hardwareType {
        case Link.hardwarePPP:
            // pppd runs both modem sessions and PPPoE on a router's uplink; PPPoE is not cellular.
            return hasCellularHint(link, device) ? .cellular : .other
        case Link.hardwareNone, Link.hardwareRawIP:
            // Raw IP is how QMI and MBIM modems hand out packets, but so do other IP-only devices.
            return hasCellularHint(link, device) ? .cellular : .other
        default:
            return nil
        }
    }

    /// uevent `DEVTYPE=`: set by the driver that registered the device (cfg80211 sets "wlan", the wwan
    /// core and modem drivers set "wwan", the bridge driver "bridge").
    package static func kindFromDeviceType(_ device: DeviceFacts) -> InterfaceKind? {
        switch device.deviceType {
        case "wlan": .wifi
        case "wwan": .cellular
        case "bridge": .bridge
        default: nil
        }
    }

    /// `phy80211` exists for every cfg80211 device, even drivers that do not set DEVTYPE.
    package static func kindFromPhy80211(_ device: DeviceFacts) -> InterfaceKind? {
        device.hasPhy80211 ? .wifi : nil
    }

    /// The bound driver: some USB and SoC modem drivers set no DEVTYPE and show as Ethernet.
    package static func kindFromDriver(_ device: DeviceFacts) -> InterfaceKind? {
        guard let driver = device.driver else { return nil }
        return cellularDrivers.contains(driver) ? .cellular : nil
    }

    /// The name: the last resort before ARPHRD_ETHER, for links whose sysfs says nothing useful.
    package static func kindFromName(_ link: Link) -> InterfaceKind? {
        if cellularNamePrefixes.contains(where: { link.name.hasPrefix($0) }) { return .cellular }
        // wlan0 (kernel default), wlp2s0 (systemd predictable names).
        if link.name.hasPrefix("wl") { return .wifi }
        return nil
    }

    /// An Ethernet-framed link nothing else claimed is a wired NIC.
    package static func kindFromEthernet(_ link: Link) -> InterfaceKind? {
        link.hardwareType == Link.hardwareEther ? .wired : nil
    }

    /// Modem facts, used by the hardware-type step to tell a modem from other PPP or raw-IP links.
    package static func hasCellularHint(_ link: Link, _ device: DeviceFacts) -> Bool {
        device.deviceType == "wwan" || kindFromDriver(device) == .cellular
            || cellularNamePrefixes.contains(where: { link.name.hasPrefix($0) })
    }

    /// Drivers that only ever drive modems. cdc_ncm and cdc_ether are absent on purpose: most USB
    /// Ethernet adapters and docks use them too.
    package static let cellularDrivers: Set<String> = [
        "qmi_wwan",  // Qualcomm QMI USB modems
        "cdc_mbim",  // USB MBIM modems (most current laptop WWAN cards)
        "huawei_cdc_ncm",  // Huawei's NCM variant, only on their modems
        "sierra_net",  // Sierra Wireless DirectIP modems
        "option",  // USB serial modems (the data path is then a ppp link)
        "rmnet",  // Qualcomm rmnet data channels
        "ipa",  // Qualcomm IP Accelerator: the on-SoC modem's data path on phones and ARM laptops
        "mhi_net",  // PCIe modems over Qualcomm's MHI bus
        "ccmni",  // MediaTek's modem data channels
    ]

    /// Names only modem stacks use: rmnet_data0 / rmnet_ipa0 (Qualcomm), ccmni0 (MediaTek), wwan0 (the wwan
    /// subsystem) and wwp0s20u4 (systemd predictable names for WWAN).
    package static let cellularNamePrefixes = ["rmnet", "ccmni", "ww"]
}
