import Reachability

/// Tells the world of each change: D-Bus signals and PropertiesChanged, a journal line per
/// interface, STATUS= for systemd, and the NetworkManager surface when it is on.
final class Publisher {
    private let bus: BusConnection
    /// The state the last update told.
    private var snapshot: ReachabilitySnapshot
    private var lastStatus = ""
    /// The host's answer as its properties last told it: PropertiesChanged names only what
    /// moved since (nil before `ready`: then every one).
    private var published: HostStatus?
    /// `[Compatibility] NetworkManager=yes`: org.freedesktop.NetworkManager for GLib and Qt.
    private var networkManager: NetworkManagerSurface?

    init(bus: BusConnection, first: CoreUpdate) {
        self.bus = bus
        snapshot = first.snapshot
    }

    /// The one line STATUS= and the journal show.
    var summary: String {
        renderSummary(snapshot.host, interfaces: snapshot.interfaces, stall: snapshot.stallEvidence)
    }

    /// READY=1 with the status, once reachd owns its name; and one PropertiesChanged with every
    /// value, for clients that cache properties across a restart (Qt, GDBusProxy, sd-bus): they
    /// read GetAll once and trust the signals after, so a restarted reachd must tell them.
    func ready() {
        bus.emitPropertiesChanged(
            path: ReachdContract.objectPath, interface: ReachdContract.interface, names: ReachabilityService.vtable.changingProperties)
        published = snapshot.host
        lastStatus = summary
        ServiceManager.notify("READY=1\nSTATUS=\(lastStatus)")
        Log.info("ready on the bus as \(ReachdContract.busName): \(lastStatus)")
    }

    /// `Updated` goes first, the whole generation in one signal for clients that keep a snapshot;
    /// then `Changed`, only when the host's answer changed, with `HostChangeDescribed` (what
    /// changed, whether to rebind) right after it; interface-level changes have
    /// `InterfacesChanged`; all move `Generation`. Then the slower parts: logs and STATUS=.
    func follow(_ update: CoreUpdate) {
        snapshot = update.snapshot
        guard let change = update.change else { return }
        let moved = published.map { HostProperty.changed(from: $0, to: change.host) } ?? HostProperty.all.map { "\($0.name)" }
        emitUpdated(change, moved: moved, previous: published)
        if change.hostChanged {
            emit("Changed") { message throws(BusError) in
                try message.append(change.host.flags.rawValue)
                try message.append(change.host.primaryInterface)
                try message.append(change.generation)
            }
            let description = change.hostChange ?? HostChange(changed: [], rebind: false)
            emit("HostChangeDescribed") { message throws(BusError) in
                try Self.append(description, of: change, to: message)
            }
        }
        if !change.changedInterfaces.isEmpty || !change.removedInterfaces.isEmpty {
            emit("InterfacesChanged") { message throws(BusError) in
                try ReachabilityService.appendInterfaces(message, change.changedInterfaces)
                try message.append(change.removedInterfaces.map(\.name))
                try message.append(change.generation)
            }
        }
        // Only what moved: each subscriber's sd-bus or GDBus reads every property named, and a
        // flap of a link that is not the primary moves none of the host's. Generation always.
        emitFacts(of: change, previous: published)
        published = change.host
        bus.emitPropertiesChanged(path: ReachdContract.objectPath, interface: ReachdContract.interface, names: moved + [HostProperty.generation])
        // One line per interface whose visible state changed: what an administrator reads back
        // in the journal when asking "what happened to the network at 14:02".
        for status in change.changedInterfaces {
            let addresses = status.addresses.isEmpty ? "no address" : status.addresses.map(\.description).joined(separator: " ")
            Log.event(.links, "link \(status.name) (\(status.kind.rawValue)): \(status.flags), \(addresses)")
        }
        for status in change.removedInterfaces { Log.event(.links, "link \(status.name) removed") }
        networkManager?.update()
        let summary = self.summary
        if summary != lastStatus {
            lastStatus = summary
            ServiceManager.notify("STATUS=\(summary)")
            Log.event(.state, summary)
        }
    }

    /// `HostChangeDescribed`'s one argument, `a{sv}` (`ReachdContract.HostChangeEntry`).
    static func append(_ description: HostChange, of change: ReachabilityChange, to message: BusMessage) throws(BusError) {
        typealias Entry = ReachdContract.HostChangeEntry
        try message.open("a", "{sv}")
        try message.appendEntry(Entry.generation, "t") { m throws(BusError) in try m.append(change.generation) }
        try message.appendEntry(Entry.changed, "as") { m throws(BusError) in try m.append(description.changedNames) }
        try message.appendEntry(Entry.rebind, "b") { m throws(BusError) in try m.append(description.rebind) }
        try message.appendEntry(Entry.primary, "s") { m throws(BusError) in try m.append(change.host.primaryInterface) }
        try message.appendEntry(Entry.sourceAddress, "s") { m throws(BusError) in try m.append(description.sourceAddress?.description ?? "") }
        try message.appendEntry(Entry.previousSourceAddress, "s") { m throws(BusError) in
            try m.append(description.previousSourceAddress?.description ?? "")
        }
        try message.close()
    }

    func emit(_ member: String, _ arguments: (BusMessage) throws(BusError) -> Void) {
        do {
            try bus.emitSignal(path: ReachdContract.objectPath, interface: ReachdContract.interface, member: member, arguments)
        } catch {
            Log.warning("cannot send \(member): \(error)")
        }
    }

    /// Starts or stops the NetworkManager surface (at start and on every reload). Off, nothing
    /// is claimed on the bus.
    func networkManagerCompatibility(_ wanted: Bool) {
        guard wanted != (networkManager != nil) else { return }
        let name = NetworkManagerSurface.busName
        if !wanted {
            networkManager?.stop()
            networkManager = nil
            Log.info("NetworkManager compatibility off: released \(name)")
            return
        }
        let surface = NetworkManagerSurface(bus: bus) { [unowned self] in self.snapshot }
        networkManager = surface
        do {
            try surface.start { [weak self, weak surface] refusal in
                guard let self, let surface, self.networkManager === surface else { return }
                if let why = refusal {
                    // Never alongside NetworkManager: reachd's own interface goes on, this one does not.
                    Log.error("NetworkManager compatibility refused: cannot own \(name): \(why); serving only \(ReachdContract.busName)")
                    ServiceManager.notify("STATUS=\(self.summary) (NetworkManager compatibility refused: \(name) is taken)")
                    self.networkManager = nil
                } else {
                    let values = surface.values
                    Log.info("NetworkManager compatibility: serving \(name) (State \(values.state), Connectivity \(values.connectivity), Metered \(values.metered))")
                }
            }
        } catch {
            Log.error("NetworkManager compatibility refused: cannot serve \(name): \(error)")
            surface.stop()
            networkManager = nil
        }
    }
}
