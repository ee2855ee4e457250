/// The host's properties on reachd's service object (`ReachdContract.interface`): one row each,
/// with how reachd writes it from a `HostStatus`, how `ReachabilityClient` reads it back, and
/// whether two answers differ in it. The contract's members, reachd's Get and GetStatus, its
/// PropertiesChanged (only the names whose values moved) and the client's reading of GetStatus
/// all follow from this table: a host property added is one row here, as `PathProperty` is for
/// paths. `Generation`, the snapshot's and not the host's, is the one property beside them.
package struct HostProperty: Sendable {
    public let name: StaticString
    public let signature: StaticString
    package let append: @Sendable (HostStatus, BusMessage) throws(BusError) -> Void
    /// Reads the value into a host status; nil for a property that only repeats another one's
    /// facts (`Constrained` is a flag) or is read with entries of its own (`Nat64Prefix`).
    package let read: (@Sendable (BusMessage, inout HostStatus) throws(BusError) -> Void)?
    package let differs: @Sendable (HostStatus, HostStatus) -> Bool

    package init(
        _ name: StaticString, _ signature: StaticString,
        append: @escaping @Sendable (HostStatus, BusMessage) throws(BusError) -> Void,
        read: (@Sendable (BusMessage, inout HostStatus) throws(BusError) -> Void)?,
        differs: @escaping @Sendable (HostStatus, HostStatus) -> Bool
    ) {
        self.name = name
        self.signature = signature
        self.append = append
        self.read = read
        self.differs = differs
    }

    package static func string(
        _ name: StaticString, _ get: @escaping @Sendable (HostStatus) -> String, _ set: (@Sendable (inout HostStatus, String) -> Void)?
    ) -> Self {
        var read: (@Sendable (BusMessage, inout HostStatus) throws(BusError) -> Void)?
        if let set { read = { message, host throws(BusError) in set(&host, try message.readString()) } }
        return Self(name, "s", append: { host, message throws(BusError) in try message.append(get(host)) }, read: read, differs: { get($0) != get($1) })
    }

    package static func bool(_ name: StaticString, _ get: @escaping @Sendable (HostStatus) -> Bool, _ set: (@Sendable (inout HostStatus, Bool) -> Void)?) -> Self {
        var read: (@Sendable (BusMessage, inout HostStatus) throws(BusError) -> Void)?
        if let set { read = { message, host throws(BusError) in set(&host, try message.readBool()) } }
        return Self(name, "b", append: { host, message throws(BusError) in try message.append(get(host)) }, read: read, differs: { get($0) != get($1) })
    }

    package static func strings(_ name: StaticString, _ get: @escaping @Sendable (HostStatus) -> [String], _ set: @escaping @Sendable (inout HostStatus, [String]) -> Void) -> Self {
        Self(
            name, "as", append: { host, message throws(BusError) in try message.append(get(host)) },
            read: { message, host throws(BusError) in set(&host, try message.readStringArray()) }, differs: { get($0) != get($1) })
    }

    /// The rows, in the contract's order.
    public static let all: [HostProperty] = [
        HostProperty(
            "Flags", "u", append: { host, message throws(BusError) in try message.append(host.flags.rawValue) },
            read: { message, host throws(BusError) in host.flags = ReachabilityFlags(rawValue: try message.readUInt32()) },
            differs: { $0.flags != $1.flags }),
        .string("PrimaryInterface", { $0.primaryInterface }, { $0.primaryInterface = $1 }),
        .string("State", { $0.state.rawValue }, { $0.state = HostState(rawValue: $1) ?? .offline }),
        .strings("AvailableInterfaces", { $0.availableInterfaces }, { $0.availableInterfaces = $1 }),
        .string("UnderlyingInterface", { $0.underlyingInterface }, { $0.underlyingInterface = $1 }),
        .string("Connectivity", { $0.connectivity.verdict.rawValue }, { $0.connectivity.verdict = ConnectivityVerdict(rawValue: $1) ?? .unknown }),
        .string("Portal", { $0.connectivity.portal }, { $0.connectivity.portal = $1 }),
        .string("AnnouncedPortal", { $0.announcedPortal }, { $0.announcedPortal = $1 }),
        .bool("PortalCaptive", { $0.portalSession.captive }, { $0.portalSession.captive = $1 }),
        .string("PortalLoginURL", { $0.portalSession.loginURL }, { $0.portalSession.loginURL = $1 }),
        .string("PortalVenueURL", { $0.portalSession.venueURL }, { $0.portalSession.venueURL = $1 }),
        HostProperty(
            "PortalSessionEnd", "t", append: { host, message throws(BusError) in try message.append(host.portalSession.ends) },
            read: { message, host throws(BusError) in host.portalSession.ends = try message.readUInt64() },
            differs: { $0.portalSession.ends != $1.portalSession.ends }),
        HostProperty(
            "PortalBytesRemaining", "x", append: { host, message throws(BusError) in try message.append(host.portalSession.bytesRemaining) },
            read: { message, host throws(BusError) in host.portalSession.bytesRemaining = try message.readInt64() },
            differs: { $0.portalSession.bytesRemaining != $1.portalSession.bytesRemaining }),
        .bool("PortalCanExtend", { $0.portalSession.canExtend }, { $0.portalSession.canExtend = $1 }),
        .bool("PortalEnding", { $0.portalSession.ending }, { $0.portalSession.ending = $1 }),
        .string("Nat64Prefix", { $0.nat64Prefix?.prefix.description ?? "" }, nil),
        .strings("ValidatedInterfaces", { $0.validatedInterfaces }, { $0.validatedInterfaces = $1 }),
        .bool("Stalled", { $0.stalled }, { $0.stalled = $1 }),
        .bool("SupportsIPv4", { $0.pathFacts.supportsIPv4 }, { $0.pathFacts.supportsIPv4 = $1 }),
        .bool("SupportsIPv6", { $0.pathFacts.supportsIPv6 }, { $0.pathFacts.supportsIPv6 = $1 }),
        .bool("SupportsDNS", { $0.pathFacts.supportsDNS }, { $0.pathFacts.supportsDNS = $1 }),
        .strings("Nameservers", { $0.pathFacts.nameservers.map(\.description) }, { $0.pathFacts.nameservers = $1.compactMap(IPAddress.init) }),
        .strings("RoutableNameservers", { $0.pathFacts.routableNameservers.map(\.description) }, {
            $0.pathFacts.routableNameservers = $1.compactMap(IPAddress.init)
        }),
        .strings("Gateways", { $0.pathFacts.gateways.map(\.description) }, { $0.pathFacts.gateways = $1.compactMap(IPAddress.init) }),
        .string("Reason", { $0.pathFacts.reason?.rawValue ?? "" }, { $0.pathFacts.reason = Reason(rawValue: $1) }),
        .bool("Constrained", { $0.flags.contains(.isConstrained) }, nil),
        .string("ExpensiveReason", { $0.expensiveReason?.rawValue ?? "" }, { $0.expensiveReason = ExpensiveReason(rawValue: $1) }),
        .string("NetworkID", { $0.networkID }, { $0.networkID = $1 }),
    ]

    /// Changed's values, the first two rows (Flags, PrimaryInterface): `Updated` carries them
    /// with every change of the host's answer, moved or not.
    package static let changedSignalNames = all.prefix(2).map { "\($0.name)" }

    /// The rows by name, for Get and the client's reading of GetStatus.
    package static let byName: [String: HostProperty] = Dictionary(uniqueKeysWithValues: all.map { ("\($0.name)", $0) })

    /// The one property beside the host's: the snapshot's generation, which moves with every change.
    public static let generation = "Generation"

    /// The names of the properties whose values differ between two answers: PropertiesChanged's.
    public static func changed(from old: HostStatus, to new: HostStatus) -> [String] {
        all.filter { $0.differs(old, new) }.map { "\($0.name)" }
    }

    /// Appends the value of property `name` of `snapshot`; false when it has no property so named.
    public static func append(_ name: String, of snapshot: ReachabilitySnapshot, to message: BusMessage) throws(BusError) -> Bool {
        if name == generation {
            try message.append(snapshot.generation)
            return true
        }
        guard let row = byName[name] else { return false }
        try row.append(snapshot.host, message)
        return true
    }

    /// Appends the `a{sv}` entries of the properties `names` (rows of this table) of `host`:
    /// the host's part of `Updated`. A name no row has is left out.
    package static func appendEntries(_ names: [String], of host: HostStatus, to message: BusMessage) throws(BusError) {
        for name in names {
            guard let row = byName[name] else { continue }
            try message.appendEntry(name, "\(row.signature)") { m throws(BusError) in try row.append(host, m) }
        }
    }

    /// Reads a GetStatus entry's variant into `host` when `key` names a property read on its own;
    /// false for any other key (the variant is left unread). A value of another type than the
    /// contract's is skipped, as an older or newer reachd may send.
    package static func readEntry(_ key: String, _ message: BusMessage, into host: inout HostStatus) throws(BusError) -> Bool {
        guard let row = byName[key], let read = row.read else { return false }
        guard try message.enterVariant(holding: "\(row.signature)") else {
            try message.skip("v")
            return true
        }
        try read(message, &host)
        try message.exit()
        return true
    }
}
