/// The properties of a WatchPath object (`ReachdContract.pathInterface`): one row each, with
/// how reachd writes it from a `Path` and how `ReachabilityClient` reads it back, so that the
/// path a program gets through reachd is the path it would derive in-process. A property added
/// to the path is one row here: the contract's members, reachd's Get and PropertiesChanged and
/// the client's reading all follow from this table.
package struct PathProperty: Sendable {
    public let name: StaticString
    public let signature: StaticString
    package let append: @Sendable (Path, BusMessage) throws(BusError) -> Void
    /// Reads the value into a path; nil for a property that only repeats another one's facts.
    package let read: (@Sendable (BusMessage, inout Path) throws(BusError) -> Void)?
    package let differs: @Sendable (Path, Path) -> Bool

    package init(
        _ name: StaticString, _ signature: StaticString,
        append: @escaping @Sendable (Path, BusMessage) throws(BusError) -> Void,
        read: (@Sendable (BusMessage, inout Path) throws(BusError) -> Void)?,
        differs: @escaping @Sendable (Path, Path) -> Bool
    ) {
        self.name = name
        self.signature = signature
        self.append = append
        self.read = read
        self.differs = differs
    }

    package static func string(_ name: StaticString, _ get: @escaping @Sendable (Path) -> String, _ set: @escaping @Sendable (inout Path, String) -> Void) -> Self {
        Self(
            name, "s", append: { path, message throws(BusError) in try message.append(get(path)) },
            read: { message, path throws(BusError) in set(&path, try message.readString()) }, differs: { get($0) != get($1) })
    }

    package static func bool(_ name: StaticString, _ get: @escaping @Sendable (Path) -> Bool, _ set: @escaping @Sendable (inout Path, Bool) -> Void) -> Self {
        Self(
            name, "b", append: { path, message throws(BusError) in try message.append(get(path)) },
            read: { message, path throws(BusError) in set(&path, try message.readBool()) }, differs: { get($0) != get($1) })
    }

    package static func strings(_ name: StaticString, _ get: @escaping @Sendable (Path) -> [String], _ set: (@Sendable (inout Path, [String]) -> Void)?) -> Self {
        var read: (@Sendable (BusMessage, inout Path) throws(BusError) -> Void)?
        if let set { read = { message, path throws(BusError) in set(&path, try message.readStringArray()) } }
        return Self(
            name, "as", append: { path, message throws(BusError) in try message.append(get(path)) }, read: read,
            differs: { get($0) != get($1) })
    }

    /// The rows, in the contract's order.
    public static let all: [PathProperty] = [
        .string("Status", { $0.status.rawValue }, { $0.status = Path.Status(rawValue: $1) ?? .unsatisfied }),
        .string("State", { $0.state.rawValue }, { $0.state = HostState(rawValue: $1) ?? .offline }),
        PathProperty(
            "Flags", "u", append: { path, message throws(BusError) in try message.append(path.flags.rawValue) },
            read: { message, path throws(BusError) in path.flags = ReachabilityFlags(rawValue: try message.readUInt32()) },
            differs: { $0.flags != $1.flags }),
        .string("PrimaryInterface", { $0.primaryInterface }, { $0.primaryInterface = $1 }),
        .strings("AvailableInterfaces", { $0.availableInterfaces.map(\.name) }, nil),
        PathProperty(
            "Interfaces", "a(iss)", append: { path, message throws(BusError) in try appendInterfaces(message, path.availableInterfaces) },
            read: { message, path throws(BusError) in path.availableInterfaces = try readInterfaces(message) },
            differs: { $0.availableInterfaces != $1.availableInterfaces }),
        .bool("Expensive", { $0.isExpensive }, { $0.isExpensive = $1 }),
        .bool("Constrained", { $0.isConstrained }, { $0.isConstrained = $1 }),
        .bool("SupportsIPv4", { $0.supportsIPv4 }, { $0.supportsIPv4 = $1 }),
        .bool("SupportsIPv6", { $0.supportsIPv6 }, { $0.supportsIPv6 = $1 }),
        .bool("SupportsDNS", { $0.supportsDNS }, { $0.supportsDNS = $1 }),
        .strings("Gateways", { $0.gateways.map(\.description) }, { $0.gateways = $1.compactMap(IPAddress.init) }),
        .string("Nat64Prefix", { $0.nat64Prefix?.description ?? "" }, { $0.nat64Prefix = IPPrefix($1) }),
        .string("Reason", { $0.unsatisfiedReason?.rawValue ?? "" }, { $0.unsatisfiedReason = Reason(rawValue: $1) }),
    ]

    /// The names of the properties whose values differ between two paths: PropertiesChanged's.
    public static func changed(from old: Path, to new: Path) -> [String] {
        all.filter { $0.differs(old, new) }.map { "\($0.name)" }
    }

    /// Appends the value of property `name` of `path`; false when no row has that name.
    public static func append(_ name: String, of path: Path, to message: BusMessage) throws(BusError) -> Bool {
        guard let row = all.first(where: { "\($0.name)" == name }) else { return false }
        try row.append(path, message)
        return true
    }

    /// `Interfaces a(iss)`: each available interface's index, name and kind.
    private static func appendInterfaces(_ message: BusMessage, _ interfaces: [Path.Interface]) throws(BusError) {
        try message.open("a", "(iss)")
        for interface in interfaces {
            try message.open("r", "iss")
            try message.append(interface.index)
            try message.append(interface.name)
            try message.append(interface.kind.rawValue)
            try message.close()
        }
        try message.close()
    }

    private static func readInterfaces(_ message: BusMessage) throws(BusError) -> [Path.Interface] {
        var interfaces: [Path.Interface] = []
        guard try message.enter("a", "(iss)") else { return [] }
        while try message.enter("r", "iss") {
            let index = try message.readInt32()
            let name = try message.readString()
            let kind = InterfaceKind(rawValue: try message.readString()) ?? .other
            interfaces.append(Path.Interface(name: name, index: index, kind: kind))
            try message.exit()
        }
        try message.exit()
        return interfaces
    }

    /// WatchPath's options, `a{sv}`: `RequiredKind` s and `ProhibitedKinds` as, kind names as
    /// `InterfaceKind` spells them. An unknown key, a key given twice, a value of another type,
    /// an unknown kind, or a kind both required and prohibited is refused with InvalidArgs naming
    /// it; so is anything past `ReachdContract.Bound`, at the first key or kind past it, before
    /// the rest of the message is read.
    public static func readOptions(_ message: BusMessage) throws(BusError) -> Path.Restriction {
        typealias Option = ReachdContract.PathOption
        typealias Bound = ReachdContract.Bound
        func invalid(_ text: String) -> BusError { BusMessage.invalidArguments(text) }
        var required: String?
        var prohibited: [String]?
        guard try message.enter("a", "{sv}") else { throw invalid("WatchPath expects options a{sv}") }
        // Each known key at most once and an unknown one refused: at most two entries are read.
        while try message.enter("e", "sv") {
            let key = try message.readString("an option key", maximumBytes: Bound.optionKey)
            switch key {
            case Option.requiredKind:
                guard required == nil else { throw invalid("option \(key) is given twice") }
                guard try message.enterVariant(holding: "s") else { throw invalid("option \(key) must be a string (s), a kind name") }
                required = try message.readString(key, maximumBytes: Bound.kindName)
            case Option.prohibitedKinds:
                guard prohibited == nil else { throw invalid("option \(key) is given twice") }
                guard try message.enterVariant(holding: "as") else {
                    throw invalid("option \(key) must be an array of strings (as), kind names")
                }
                prohibited = try message.readStrings(key, maximumCount: Bound.kinds, maximumBytes: Bound.kindName)
            default:
                throw invalid("unknown option \(key.inertExcerpt()) (known: \(Option.requiredKind), \(Option.prohibitedKinds))")
            }
            try message.exit()
            try message.exit()
        }
        try message.exit()
        switch Path.Restriction.parse(required: required, prohibited: prohibited ?? []) {
        case let .success(restriction): return restriction
        case let .failure(error): throw invalid(error.description)
        }
    }

    /// WatchPath's options for `restriction`.
    package static func appendOptions(_ restriction: Path.Restriction, to message: BusMessage) throws(BusError) {
        try message.open("a", "{sv}")
        if let required = restriction.requiredInterfaceType {
            try message.appendEntry(ReachdContract.PathOption.requiredKind, "s") { entry throws(BusError) in try entry.append(required.rawValue) }
        }
        if !restriction.prohibitedInterfaceTypes.isEmpty {
            try message.appendEntry(ReachdContract.PathOption.prohibitedKinds, "as") { entry throws(BusError) in
                try entry.append(restriction.prohibitedInOrder.map(\.rawValue))
            }
        }
        try message.close()
    }
}
