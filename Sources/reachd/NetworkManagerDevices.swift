import Reachability

/// NetworkManager's own word on each link's cost, while NetworkManager runs on the host: its
/// devices' `Metered` (the user's `connection.metered`, else NetworkManager's guess), by the
/// name of each device's IP interface, handed to the core (`ReachabilityCore.record`), where
/// reachd.conf's rules and reachd's own facts rank around it (`ExpensiveReason`).
///
/// Followed only while org.freedesktop.NetworkManager has an owner other than reachd (whose own
/// surface may hold the name when NetworkManager does not run): NameOwnerChanged starts and ends
/// it, and when NetworkManager goes away, everything it said is forgotten. Every call is
/// asynchronous, addressed to the owner's unique name, and ends within `callTimeout`.
/// The owner is a peer like any other: at most `deviceLimit` devices are followed, at most one
/// call per device is in flight, a string is measured before it is read, and a value that is no
/// interface name or no NMMetered is refused by name in the journal (the first `refusalsLogged`
/// of each owner) and never reaches the core. Loop-thread only.
final class NetworkManagerDevices {
    static let busName = "org.freedesktop.NetworkManager"
    static let path = "/org/freedesktop/NetworkManager"
    static let interface = "org.freedesktop.NetworkManager"
    static let deviceInterface = "org.freedesktop.NetworkManager.Device"
    static let devicesPath = "/org/freedesktop/NetworkManager/Devices"
    /// Far more devices than a host has (each veth pair, bridge port and container's end counts).
    static let deviceLimit = 256
    /// NetworkManager answers in milliseconds; a peer that does not is not waited on longer.
    static let callTimeout: Duration = .seconds(5)
    /// A device's properties: about 50 in NetworkManager 1.42; more is no NetworkManager.
    static let propertyLimit = 512
    /// Longer than any object path NetworkManager makes, or any property name.
    static let pathBytes = 255
    /// What is read of an interface name before it is refused: past IFNAMSIZ already.
    static let nameBytes = 64
    static let refusalsLogged = 8
    /// What a GetAll of a device that went meanwhile answers: GDBus, which NetworkManager uses,
    /// says UnknownMethod of an object no longer served.
    static let gone: Set<String> = [
        "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownInterface",
    ]

    /// One device as its last answers and signals left it.
    private struct Device {
        var interface = ""
        var ipInterface = ""
        var metered = NetworkManagerMetered.unknown
        /// GetAll in flight, cancelled when dropped.
        var fetch: BusSlot?
        /// The name the facts are about: the IP interface while there is one (a modem's
        /// wwan0 or ppp0, not its control port), else the device's own.
        var name: String { ipInterface.isEmpty ? interface : ipInterface }
    }

    /// What is followed of one owner (one run of NetworkManager).
    private final class Owner {
        let name: String
        var slots: [BusSlot] = []
        var devices: [String: Device] = [:]
        var refusals = 0
        init(name: String) { self.name = name }
    }

    private let bus: BusConnection
    private let said: ([(interface: String, metered: NetworkManagerMetered)]) -> Void
    private var slots: [BusSlot] = []
    private var owner: Owner?
    /// What the core was told, by interface name (never `unknown`).
    private var told: [String: NetworkManagerMetered] = [:]

    /// `said` gets each change of what NetworkManager says of an interface (`unknown`: forget).
    init(bus: BusConnection, said: @escaping ([(interface: String, metered: NetworkManagerMetered)]) -> Void) {
        self.bus = bus
        self.said = said
    }

    /// Follows the name's owner: the match is asked before the owner, so no change falls between.
    func start() throws(BusError) {
        slots.append(try bus.match(
            "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',interface='org.freedesktop.DBus',"
                + "member='NameOwnerChanged',arg0='\(Self.busName)'"
        ) { [weak self] message in
            guard let self else { return }
            do throws(BusError) {
                _ = try message.readString("name", maximumBytes: Self.pathBytes)
                _ = try message.readString("old owner", maximumBytes: Self.pathBytes)
                self.ownerChanged(to: try message.readString("new owner", maximumBytes: Self.pathBytes))
            } catch {
                Log.warning("NetworkManager: a NameOwnerChanged reachd cannot read: \(error)")
            }
        })
        slots.append(try bus.callAsync(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "GetNameOwner", timeout: Self.callTimeout, { message throws(BusError) in try message.append(Self.busName) }
        ) { [weak self] result in
            // NameHasNoOwner: NetworkManager does not run; its start will be signalled.
            guard let self, case let .success(message) = result, let name = try? message.readString("owner", maximumBytes: Self.pathBytes)
            else { return }
            self.ownerChanged(to: name)
        })
    }

    private func ownerChanged(to name: String) {
        guard name != owner?.name else { return }
        if let previous = owner {
            owner = nil
            Log.info("NetworkManager (\(previous.name)) is gone: what it said of \(told.count) interface(s) is forgotten")
            tell(Set(told.keys))
        }
        // reachd's own NetworkManager surface holds the name when NetworkManager does not run.
        guard !name.isEmpty, name != bus.uniqueName else { return }
        let followed = Owner(name: name)
        owner = followed
        Log.info("NetworkManager runs (\(name)): following its devices' Metered")
        do {
            try follow(followed)
        } catch {
            Log.warning("NetworkManager (\(name)): cannot follow its devices: \(error)")
            owner = nil
        }
    }

    /// The owner's signals first, then its list: a device added in between is heard either way.
    private func follow(_ followed: Owner) throws(BusError) {
        let sender = followed.name
        for member in ["DeviceAdded", "DeviceRemoved"] {
            followed.slots.append(try bus.match(
                "type='signal',sender='\(sender)',path='\(Self.path)',interface='\(Self.interface)',member='\(member)'"
            ) { [weak self, weak followed] message in
                guard let self, let followed, self.owner === followed else { return }
                do throws(BusError) {
                    let path = try message.readObjectPath("device", maximumBytes: Self.pathBytes)
                    if member == "DeviceAdded" { self.add(path, of: followed) } else { self.remove(path, of: followed) }
                } catch {
                    self.refuse("\(member) that reachd cannot read: \(error)", of: followed)
                }
            })
        }
        followed.slots.append(try bus.match(
            "type='signal',sender='\(sender)',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',"
                + "path_namespace='\(Self.devicesPath)',arg0='\(Self.deviceInterface)'"
        ) { [weak self, weak followed] message in
            guard let self, let followed, self.owner === followed, let path = message.path, followed.devices[path] != nil else { return }
            self.propertiesChanged(message, at: path, of: followed)
        })
        followed.slots.append(try bus.callAsync(
            destination: sender, path: Self.path, interface: Self.interface, member: "GetDevices", timeout: Self.callTimeout
        ) { [weak self, weak followed] result in
            guard let self, let followed, self.owner === followed else { return }
            do throws(BusError) {
                let listed = try result.get().readObjectPaths("devices", maximumCount: Self.deviceLimit, maximumBytes: Self.pathBytes)
                for path in listed.paths { self.add(path, of: followed) }
                if listed.more { self.refuse("GetDevices lists more than \(Self.deviceLimit) devices: following the first", of: followed) }
            } catch {
                self.refuse("GetDevices: \(error)", of: followed)
            }
        })
    }

    private func add(_ path: String, of followed: Owner) {
        guard followed.devices[path] == nil else { return }
        guard path.hasPrefix(Self.devicesPath + "/") else {
            return refuse("device \(path.inertExcerpt()) is not under \(Self.devicesPath): ignored", of: followed)
        }
        guard followed.devices.count < Self.deviceLimit else {
            return refuse("more than \(Self.deviceLimit) devices: \(path) is not followed", of: followed)
        }
        followed.devices[path] = Device()
        fetch(path, of: followed)
    }

    private func remove(_ path: String, of followed: Owner) {
        guard let device = followed.devices.removeValue(forKey: path) else { return }
        tell([device.name])
    }

    /// Asks for the device's properties; a fetch still in flight is cancelled, so one is.
    private func fetch(_ path: String, of followed: Owner) {
        do {
            followed.devices[path]?.fetch = try bus.callAsync(
                destination: followed.name, path: path, interface: "org.freedesktop.DBus.Properties", member: "GetAll",
                timeout: Self.callTimeout, { message throws(BusError) in try message.append(Self.deviceInterface) }
            ) { [weak self, weak followed] result in
                guard let self, let followed, self.owner === followed, followed.devices[path] != nil else { return }
                followed.devices[path]?.fetch = nil
                switch result {
                case let .success(message): self.update(path, from: message, of: followed)
                case let .failure(error) where Self.gone.contains(error.name):
                    self.remove(path, of: followed)  // gone before it answered; DeviceRemoved follows
                case let .failure(error): self.refuse("device \(path): GetAll: \(error)", of: followed)
                }
            }
        } catch {
            refuse("device \(path): cannot ask its properties: \(error)", of: followed)
        }
    }

    /// PropertiesChanged (s interface, a{sv} changed, as invalidated): the values it carries,
    /// and a fetch when one of ours was only invalidated.
    private func propertiesChanged(_ message: BusMessage, at path: String, of followed: Owner) {
        do throws(BusError) {
            _ = try message.readString("interface", maximumBytes: Self.pathBytes)
            update(path, from: message, of: followed)
            let invalidated = try message.readStrings("invalidated", maximumCount: Self.propertyLimit, maximumBytes: Self.pathBytes)
            if invalidated.contains(where: { ["Interface", "IpInterface", "Metered"].contains($0) }) { fetch(path, of: followed) }
        } catch {
            refuse("device \(path): a PropertiesChanged reachd cannot read: \(error)", of: followed)
        }
    }

    /// Reads an a{sv} of the device's properties (GetAll's answer, PropertiesChanged's values),
    /// keeps the three reachd uses, and tells the core what moved.
    private func update(_ path: String, from message: BusMessage, of followed: Owner) {
        guard var device = followed.devices[path] else { return }
        let before = device
        do throws(BusError) {
            guard try message.enter("a", "{sv}") else { throw BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "expected a{sv}") }
            var read = 0
            while try message.enter("e", "sv") {
                read += 1
                guard read <= Self.propertyLimit else {
                    throw BusError(name: "org.freedesktop.DBus.Error.LimitsExceeded", message: "more than \(Self.propertyLimit) properties")
                }
                let key = try message.readString("property name", maximumBytes: Self.pathBytes)
                switch key {
                case "Interface", "IpInterface":
                    guard let name = try readName(key, from: message, of: followed, path: path) else { break }
                    if key == "Interface" { device.interface = name } else { device.ipInterface = name }
                case "Metered":
                    guard try message.enterVariant(holding: "u") else {
                        try message.skip("v")
                        refuse("device \(path): Metered is not a uint32: ignored", of: followed)
                        break
                    }
                    let value = try message.readUInt32()
                    try message.exit()
                    if let metered = NetworkManagerMetered(rawValue: value) {
                        device.metered = metered
                    } else {
                        refuse("device \(path): Metered \(value) is none of NetworkManager's values (0-4): taken as unknown", of: followed)
                        device.metered = .unknown
                    }
                default:
                    try message.skip("v")
                }
                try message.exit()
            }
            try message.exit()
        } catch {
            refuse("device \(path): properties reachd cannot read: \(error)", of: followed)
        }
        followed.devices[path] = device
        guard device.name != before.name || device.metered != before.metered else { return }
        tell([before.name, device.name])
    }

    /// An interface name from a variant, or nil (refused in the journal) when it is not one the
    /// kernel would give: 1 to 15 bytes, no '/', ':' nor white space, not "." or "..".
    private func readName(_ key: String, from message: BusMessage, of followed: Owner, path: String) throws(BusError) -> String? {
        guard try message.enterVariant(holding: "s") else {
            try message.skip("v")
            refuse("device \(path): \(key) is not a string: ignored", of: followed)
            return nil
        }
        defer { _ = try? message.exit() }
        let name: String
        do {
            name = try message.readString(key, maximumBytes: Self.nameBytes)
        } catch {
            refuse("device \(path): \(error.message): ignored", of: followed)
            return nil
        }
        let bytes = name.utf8
        let valid = name.isEmpty
            || (bytes.count <= 15 && name != "." && name != ".."
                && !bytes.contains { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: ":") || $0 <= 0x20 || $0 == 0x7F })
        guard valid else {
            refuse("device \(path): \(key) \(name.inertExcerpt()) is no interface name: ignored", of: followed)
            return nil
        }
        return name
    }

    /// Tells the core what NetworkManager now says of `names` (those that moved): of all the
    /// devices by that name (a bounded few), the most explicit word.
    private func tell(_ names: Set<String>) {
        var changes: [(interface: String, metered: NetworkManagerMetered)] = []
        for name in names.sorted() where !name.isEmpty {
            let now = owner.map { Self.word(on: name, among: $0.devices.values) } ?? .unknown
            guard now != told[name] ?? .unknown else { continue }
            told[name] = now == .unknown ? nil : now
            changes.append((name, now))
        }
        said(changes)
    }

    /// The user's yes or no first, then a guess of yes, of no, nothing.
    private static func word(on name: String, among devices: some Sequence<Device>) -> NetworkManagerMetered {
        func rank(_ metered: NetworkManagerMetered) -> Int {
            switch metered {
            case .yes, .no: 3
            case .guessYes: 2
            case .guessNo: 1
            case .unknown: 0
            }
        }
        return devices.filter { $0.name == name }.map(\.metered).max { rank($0) < rank($1) } ?? .unknown
    }

    /// One journal line for a refused value, up to `refusalsLogged` for each owner.
    private func refuse(_ what: String, of followed: Owner) {
        followed.refusals += 1
        if followed.refusals <= Self.refusalsLogged {
            Log.warning("NetworkManager (\(followed.name)): \(what)")
        }
        if followed.refusals == Self.refusalsLogged {
            Log.warning("NetworkManager (\(followed.name)): further refusals are not logged")
        }
    }
}
