import Reachability

/// `[Compatibility] NetworkManager=yes`: the part of org.freedesktop.NetworkManager that GLib's
/// GNetworkMonitor (gio/gnetworkmonitornm.c) and Qt's QNetworkInformation (the networkmanager
/// plugin) read, so programs that never heard of reachd follow its answer on hosts where
/// NetworkManager does not run. Fed by the same snapshot as org.reachd.Reachability1; the values
/// are `NetworkManagerValues`.
///
/// What the clients need, and why each piece is here:
/// - GLib picks this backend only if the name has an owner and the manager's GetAll has
///   `Connectivity`; it reads State, Connectivity, Metered and follows PropertiesChanged with the
///   values in the changed dictionary.
/// - Qt needs the owner and a GetAll, reads PrimaryConnection, then through introspection the
///   active connection's `Devices` and the first device's `DeviceType` and `Metered`.
/// PropertiesChanged goes out only for values that changed, so a client sees one signal per change,
/// and once with every value when the name is ours (a restarted reachd's values).
final class NetworkManagerSurface {
    static let busName = "org.freedesktop.NetworkManager"
    static let path = "/org/freedesktop/NetworkManager"
    static let interface = "org.freedesktop.NetworkManager"
    static let activeInterface = "org.freedesktop.NetworkManager.Connection.Active"
    static let deviceInterface = "org.freedesktop.NetworkManager.Device"

    private let bus: BusConnection
    private let snapshot: () -> ReachabilitySnapshot
    /// What the objects show and the last PropertiesChanged told.
    private(set) var values: NetworkManagerValues
    private var slots: [BusSlot] = []
    /// The active connection and device objects of `values.primaryDevice`.
    private var deviceSlots: [BusSlot] = []
    private var nameRequested = false

    init(bus: BusConnection, snapshot: @escaping () -> ReachabilitySnapshot) {
        self.bus = bus
        self.snapshot = snapshot
        let current = snapshot()
        values = NetworkManagerValues(host: current.host, interfaces: current.interfaces)
    }

    static func activePath(_ index: Int32) -> String { "\(path)/ActiveConnection/\(index)" }
    static func devicePath(_ index: Int32) -> String { "\(path)/Devices/\(index)" }

    /// Serves the objects, then asks for the name without queueing (sd-bus adds DO_NOT_QUEUE
    /// unless told to queue): when a client sees the owner, the objects are there. `outcome`
    /// runs once the bus answered, with nil when the name is ours or why not; when another
    /// connection owns it (NetworkManager itself) the objects are withdrawn.
    func start(_ outcome: @escaping (_ refusal: String?) -> Void) throws(BusError) {
        slots.append(try bus.add(ManagerObject(self), at: Self.path, interface: Self.interface, vtable: ManagerObject.vtable))
        try serveDevice(values.primaryDevice)
        nameRequested = true
        slots.append(try bus.requestName(Self.busName) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(.owned):
                // Every value at once: Qt reads GetAll when it loads and then only follows
                // PropertiesChanged, so after a restart it would keep what the last reachd said.
                self.bus.emitPropertiesChanged(path: Self.path, interface: Self.interface, names: ManagerObject.vtable.changingProperties)
                outcome(nil)
            case .success(.ownedByAnother), .success(.queued):
                self.withdraw(releasing: false)
                outcome("another connection owns it (NetworkManager runs?)")
            case let .failure(error):
                self.withdraw(releasing: false)
                outcome(error.description)
            }
        })
    }

    /// Gives the name up and removes every object (switched off on reload).
    func stop() { withdraw(releasing: true) }

    private func withdraw(releasing: Bool) {
        if releasing, nameRequested { bus.releaseName(Self.busName) }
        nameRequested = false
        deviceSlots = []
        slots = []
    }

    /// Recomputes the values; emits PropertiesChanged with the names whose values changed. A new
    /// primary device's objects exist before the signal that names them goes out.
    func update() {
        guard !slots.isEmpty else { return }
        let current = snapshot()
        let new = NetworkManagerValues(host: current.host, interfaces: current.interfaces)
        guard new != values else { return }
        let old = values
        if new.primaryDevice?.index != old.primaryDevice?.index {
            do {
                try serveDevice(new.primaryDevice)
            } catch {
                Log.warning("NetworkManager compatibility: cannot serve the device of \(new.primaryDevice?.name ?? "?"): \(error)")
            }
        }
        values = new
        var names: [String] = []
        if new.state != old.state { names.append("State") }
        if new.connectivity != old.connectivity { names.append("Connectivity") }
        if new.metered != old.metered { names.append("Metered") }
        if new.primaryDevice?.index != old.primaryDevice?.index { names.append("PrimaryConnection") }
        if !names.isEmpty { bus.emitPropertiesChanged(path: Self.path, interface: Self.interface, names: names) }
        // The same link with another kind or metered-ness (a reload's rules): its own signal.
        if let device = new.primaryDevice, let before = old.primaryDevice, device.index == before.index {
            var changed: [String] = []
            if device.deviceType != before.deviceType { changed.append("DeviceType") }
            if device.metered != before.metered { changed.append("Metered") }
            if !changed.isEmpty { bus.emitPropertiesChanged(path: Self.devicePath(device.index), interface: Self.deviceInterface, names: changed) }
        }
    }

    /// Replaces the active connection and device objects with those of `device` (none for nil).
    private func serveDevice(_ device: NetworkManagerValues.Device?) throws(BusError) {
        var served: [BusSlot] = []
        if let device {
            served.append(try bus.add(
                ActiveConnectionObject(index: device.index), at: Self.activePath(device.index),
                interface: Self.activeInterface, vtable: ActiveConnectionObject.vtable))
            served.append(try bus.add(
                DeviceObject(self, index: device.index), at: Self.devicePath(device.index),
                interface: Self.deviceInterface, vtable: DeviceObject.vtable))
        }
        // Released after the new ones exist: a path that stays the same is never missing.
        deviceSlots = served
    }

    /// `/org/freedesktop/NetworkManager`, interface org.freedesktop.NetworkManager.
    private final class ManagerObject: BusObject {
        unowned let surface: NetworkManagerSurface
        init(_ surface: NetworkManagerSurface) { self.surface = surface }

        static let vtable = BusVTable([
            .property("State", signature: "u", emitsChange: true),
            .property("Connectivity", signature: "u", emitsChange: true),
            .property("Metered", signature: "u", emitsChange: true),
            .property("PrimaryConnection", signature: "o", emitsChange: true),
        ])

        func property(_ name: String, into reply: BusMessage) throws(BusError) {
            let values = surface.values
            switch name {
            case "State": try reply.append(values.state)
            case "Connectivity": try reply.append(values.connectivity)
            case "Metered": try reply.append(values.metered)
            case "PrimaryConnection":
                try reply.append(objectPath: values.primaryDevice.map { NetworkManagerSurface.activePath($0.index) } ?? "/")
            default: throw BusError.unknownProperty(name)
            }
        }
    }

    /// `/org/freedesktop/NetworkManager/ActiveConnection/N`: its one device (N is the ifindex).
    private final class ActiveConnectionObject: BusObject {
        let index: Int32
        init(index: Int32) { self.index = index }

        static let vtable = BusVTable([.property("Devices", signature: "ao", emitsChange: false)])

        func property(_ name: String, into reply: BusMessage) throws(BusError) {
            guard name == "Devices" else { throw BusError.unknownProperty(name) }
            try reply.open("a", "o")
            try reply.append(objectPath: NetworkManagerSurface.devicePath(index))
            try reply.close()
        }
    }

    /// `/org/freedesktop/NetworkManager/Devices/N`: the link's type and metered-ness.
    private final class DeviceObject: BusObject {
        unowned let surface: NetworkManagerSurface
        let index: Int32
        init(_ surface: NetworkManagerSurface, index: Int32) {
            self.surface = surface
            self.index = index
        }

        static let vtable = BusVTable([
            .property("DeviceType", signature: "u", emitsChange: true),
            .property("Metered", signature: "u", emitsChange: true),
        ])

        func property(_ name: String, into reply: BusMessage) throws(BusError) {
            // Served only while it is the primary device: the values are current.
            guard let device = surface.values.primaryDevice, device.index == index else {
                throw BusError(name: "org.freedesktop.DBus.Error.UnknownObject", message: "device \(index) is gone")
            }
            switch name {
            case "DeviceType": try reply.append(device.deviceType)
            case "Metered": try reply.append(device.metered)
            default: throw BusError.unknownProperty(name)
            }
        }
    }
}
