import Reachability

/// A service's network sandbox, read from systemd (org.freedesktop.systemd1 on the system bus)
/// as `systemctl show` reads it: one Get per property, all asynchronous, addressed to the unit's
/// object, each ending within `timeout`, so a systemd that is slow, mute or absent costs reachd's
/// loop nothing: the caller is answered with an error naming it. Reading a unit's properties
/// needs no privilege, and systemd loads a unit that is not loaded to answer.
/// At most `readingLimit` reads are in flight; one more is refused. Loop-thread only.
final class ServiceSandboxes {
    static let busName = "org.freedesktop.systemd1"
    static let unitInterface = "org.freedesktop.systemd1.Unit"
    static let serviceInterface = "org.freedesktop.systemd1.Service"
    static let managerInterface = "org.freedesktop.systemd1.Manager"
    static let managerPath = "/org/freedesktop/systemd1"
    /// systemd answers a property in well under a millisecond; one that does not in 2 s is
    /// not waited on (the caller's own bus timeout is 25 s).
    static let timeout = ReachdContract.systemdTimeout
    static let readingLimit = 32
    /// More than any real unit's lists (systemd takes what its unit file says, unbounded).
    static let listLimit = 1024
    static let stringBytes = 4096

    /// One read: the values as they arrive, until every Get answered or one failed.
    private final class Reading {
        let unit: String
        var values = Values()
        var slots: [BusSlot] = []
        var pending = 0
        var done: ((Result<UnitSandbox, BusError>) -> Void)?
        init(unit: String, done: @escaping (Result<UnitSandbox, BusError>) -> Void) {
            self.unit = unit
            self.done = done
        }
    }

    private struct Values {
        var loadState = ""
        /// The manager's build features ("+PAM ... -BPF_FRAMEWORK ...").
        var features = ""
        var mainPID: UInt32 = 0
        var user = ""
        var dynamicUser = false
        var privateNetwork = false
        var namespacePath = ""
        var addressAllow: [IPPrefix] = []
        var addressDeny: [IPPrefix] = []
        var interfaces = UnitSandbox.NameList()
        var families = UnitSandbox.NameList()
        var controlGroup = ""
    }

    /// The properties read, with their interfaces (LoadState is every unit's; the rest a
    /// service's exec and cgroup settings).
    private static let properties: [(interface: String, name: String)] =
        [(unitInterface, "LoadState"), (managerInterface, "Features")]
        + ["MainPID", "User", "DynamicUser", "PrivateNetwork", "NetworkNamespacePath", "IPAddressAllow", "IPAddressDeny",
           "RestrictNetworkInterfaces", "RestrictAddressFamilies", "ControlGroup"].map { (serviceInterface, $0) }

    /// Reads the variant of the property `name` into `values`.
    private static func read(_ name: String, _ message: BusMessage, into values: inout Values) throws(BusError) {
        switch name {
        case "LoadState": values.loadState = try readString(message, name)
        case "Features": values.features = try readString(message, name)
        case "MainPID": values.mainPID = try variant(message, "u") { message throws(BusError) in try message.readUInt32() }
        case "User": values.user = try readString(message, name)
        case "DynamicUser": values.dynamicUser = try variant(message, "b") { message throws(BusError) in try message.readBool() }
        case "PrivateNetwork": values.privateNetwork = try variant(message, "b") { message throws(BusError) in try message.readBool() }
        case "NetworkNamespacePath": values.namespacePath = try readString(message, name)
        case "IPAddressAllow": values.addressAllow = try readPrefixes(message, name)
        case "IPAddressDeny": values.addressDeny = try readPrefixes(message, name)
        case "RestrictNetworkInterfaces": values.interfaces = try readNameList(message, name)
        case "ControlGroup": values.controlGroup = try readString(message, name)
        default: values.families = try readNameList(message, name)
        }
    }

    private let bus: BusConnection
    private var reading = 0

    private let sysfsRoot: String

    init(bus: BusConnection, sysfsRoot: String) {
        self.bus = bus
        self.sysfsRoot = sysfsRoot
    }

    /// systemd's object path of `unit` (its bus label: every byte but a letter or a digit,
    /// and a leading digit, as `_xx`).
    static func objectPath(of unit: String) -> String {
        var label = ""
        for (offset, byte) in unit.utf8.enumerated() {
            let letter = (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A)
            let digit = byte >= 0x30 && byte <= 0x39
            label += letter || (digit && offset > 0) ? String(UnicodeScalar(byte)) : "_" + String(byte, radix: 16).leftPadded(to: 2)
        }
        return "/org/freedesktop/systemd1/unit/" + label
    }

    /// Reads `unit` (a name `UnitName` accepted); `done` runs once, on the loop.
    func read(_ unit: String, _ done: @escaping (Result<UnitSandbox, BusError>) -> Void) throws(BusError) {
        guard reading < Self.readingLimit else {
            throw BusError(
                name: ReachdContract.ErrorName.limitExceeded,
                message: "\(Self.readingLimit) units are being read from systemd already, the most reachd reads at once; ask again in a moment")
        }
        reading += 1
        let current = Reading(unit: unit, done: done)
        let path = Self.objectPath(of: unit)
        for property in Self.properties {
            current.pending += 1
            current.slots.append(try bus.callAsync(
                destination: Self.busName, path: property.interface == Self.managerInterface ? Self.managerPath : path, interface: "org.freedesktop.DBus.Properties", member: "Get", timeout: Self.timeout,
                { message throws(BusError) in
                    try message.append(property.interface)
                    try message.append(property.name)
                }
            ) { [unowned self] reply in
                guard current.done != nil else { return }
                do throws(BusError) {
                    try Self.read(property.name, reply.get(), into: &current.values)
                } catch {
                    return self.finish(current, .failure(Self.refusal(error, unit: unit, property: property.name)))
                }
                current.pending -= 1
                if current.pending == 0 { self.finish(current, Self.sandbox(current, sysfsRoot: self.sysfsRoot)) }
            })
        }
    }

    /// The cgroup of `unit` as systemd names it (`ControlGroup`, "" while the unit does not run):
    /// one Get, under the same deadline, for a watched unit's traffic (`UnitTraffic`), which
    /// needs nothing else of the sandbox. `done` runs once, on the loop, unless the returned
    /// slot is released first (the call is then cancelled).
    func readControlGroup(_ unit: String, _ done: @escaping (Result<String, BusError>) -> Void) throws(BusError) -> BusSlot {
        try bus.callAsync(
            destination: Self.busName, path: Self.objectPath(of: unit), interface: "org.freedesktop.DBus.Properties", member: "Get",
            timeout: Self.timeout,
            { message throws(BusError) in
                try message.append(Self.serviceInterface)
                try message.append("ControlGroup")
            }
        ) { reply in
            do throws(BusError) {
                done(.success(try Self.readString(reply.get(), "ControlGroup")))
            } catch {
                done(.failure(Self.refusal(error, unit: unit, property: "ControlGroup")))
            }
        }
    }

    private func finish(_ current: Reading, _ result: Result<UnitSandbox, BusError>) {
        guard let done = current.done else { return }
        current.done = nil
        reading -= 1
        // The other Gets are cancelled with their slots, after this handler returns.
        let slots = current.slots
        current.slots = []
        done(result)
        withExtendedLifetime(slots) {}
    }

    private static func sandbox(_ current: Reading, sysfsRoot: String) -> Result<UnitSandbox, BusError> {
        let values = current.values
        guard values.loadState == "loaded" else {
            return .failure(BusError(
                name: ReachdContract.ErrorName.noSuchUnit,
                message: "systemd has no unit \(current.unit) (LoadState=\(values.loadState.inertExcerpt()))"))
        }
        let user: UnitSandbox.User =
            if values.mainPID != 0, let uid = UnitRoutes.uid(ofProcess: values.mainPID) { .known(uid) }
            else if values.dynamicUser { .dynamic }
            else if values.user.isEmpty { .known(0) }
            else { UnitRoutes.uid(ofUser: values.user).map { .known($0) } ?? .unresolved(values.user) }
        var sandbox = UnitSandbox(
            unit: current.unit, user: user, namespacePath: values.namespacePath, privateNetwork: values.privateNetwork,
            addressAllow: values.addressAllow, addressDeny: values.addressDeny, interfaces: values.interfaces,
            interfacesEnforced: !values.features.split(separator: " ").contains("-BPF_FRAMEWORK"), families: values.families,
            mainPID: values.mainPID)
        sandbox.addressFilterEnforced = UnitRoutes.addressFilterEnforced(sysfsRoot: sysfsRoot)
        sandbox.controlGroup = values.controlGroup
        return .success(sandbox)
    }

    /// What the caller is told when systemd did not answer a Get.
    private static func refusal(_ error: BusError, unit: String, property: String) -> BusError {
        let silent = ["org.freedesktop.DBus.Error.Timeout", "org.freedesktop.DBus.Error.NoReply", "System.Error.ETIMEDOUT"]
        if silent.contains(error.name) || error.message.contains("imed out") {
            return BusError(
                name: ReachdContract.ErrorName.timeout,
                message: "systemd (\(busName)) did not answer for \(unit) within \(timeout.millisecondsRoundedUp) ms")
        }
        if error.name == "org.freedesktop.DBus.Error.ServiceUnknown" || error.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
            return BusError(name: ReachdContract.ErrorName.noSuchUnit, message: "systemd does not run on this system bus (\(busName) has no owner)")
        }
        return BusError(name: ReachdContract.ErrorName.noSuchUnit, message: "systemd cannot tell \(property) of \(unit): \(error.name): \(error.message.inertExcerpt())")
    }

    private static func variant<T>(_ message: BusMessage, _ contents: String, _ read: (BusMessage) throws(BusError) -> T) throws(BusError) -> T {
        guard try message.enterVariant(holding: contents) else { throw BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "not a \(contents)") }
        let value = try read(message)
        try message.exit()
        return value
    }

    private static func readString(_ message: BusMessage, _ name: String) throws(BusError) -> String {
        try variant(message, "s") { message throws(BusError) in try message.readString(name, maximumBytes: stringBytes) }
    }

    /// `a(iayu)`: family, address bytes, prefix length.
    private static func readPrefixes(_ message: BusMessage, _ name: String) throws(BusError) -> [IPPrefix] {
        try variant(message, "a(iayu)") { message throws(BusError) in
            guard try message.enter("a", "(iayu)") else { return [] }
            var prefixes: [IPPrefix] = []
            while try message.enter("r", "iayu") {
                _ = try message.readInt32()
                let bytes = try message.readBytes(name, maximumCount: 16)
                let length = try message.readUInt32()
                try message.exit()
                guard prefixes.count < listLimit else { throw BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "\(name): over \(listLimit)") }
                guard let address = IPAddress(bytes: bytes), length <= address.bitWidth else {
                    throw BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "\(name): not an address and prefix")
                }
                prefixes.append(IPPrefix(address, length: UInt8(length)))
            }
            try message.exit()
            return prefixes
        }
    }

    /// `(bas)`: an allow list (true) or a deny list, and its names.
    private static func readNameList(_ message: BusMessage, _ name: String) throws(BusError) -> UnitSandbox.NameList {
        try variant(message, "(bas)") { message throws(BusError) in
            guard try message.enter("r", "bas") else { return .init() }
            let allows = try message.readBool()
            let names = try message.readStrings(name, maximumCount: listLimit, maximumBytes: 64)
            try message.exit()
            return .init(allows: allows, names: names)
        }
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
