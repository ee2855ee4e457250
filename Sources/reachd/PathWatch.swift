import Reachability

/// A watch on the host's path restricted to interface kinds (`WatchPath`): an object under
/// `/org/reachd/Reachability1/watch/N` with interface `org.reachd.Reachability1.Path`, whose
/// properties are the host's answer as that restriction sees it (the library's one derivation,
/// `Path(snapshot:restriction:)`), with PropertiesChanged only when that answer changes. It is
/// a watch like `Watch`: the same limits, `Unwatch`, and it dies with its client.
final class PathWatch: HeldWatch {
    static let vtable = BusVTable(ReachdContract.pathMembers)

    let path: String
    let owner: String
    let uid: UInt32
    let restriction: Path.Restriction
    private unowned let paths: PathWatches
    var slot: BusSlot?

    init(path: String, owner: String, uid: UInt32, restriction: Path.Restriction, paths: PathWatches) {
        self.path = path
        self.owner = owner
        self.uid = uid
        self.restriction = restriction
        self.paths = paths
    }

    func call(_ method: String, _ message: BusMessage) throws(BusError) -> BusReply {
        throw BusError.unknownMethod(method)
    }

    func property(_ name: String, into reply: BusMessage) throws(BusError) {
        switch name {
        case "RequiredKind": try reply.append(restriction.requiredInterfaceType?.rawValue ?? "")
        case "ProhibitedKinds": try reply.append(restriction.prohibitedInOrder.map(\.rawValue))
        default:
            guard try PathProperty.append(name, of: paths.answer(for: restriction), to: reply) else { throw BusError.unknownProperty(name) }
        }
    }
}

/// The distinct restrictions of all path watches, each with its one answer: derived once per
/// change however many watches share it, and announced on those whose answer it changed.
/// The host's path is the system's view (uid 0), as the host's own properties are.
final class PathWatches {
    private let bus: BusConnection
    /// The state the last update told (a new restriction's answer is derived from it).
    private var snapshot: ReachabilitySnapshot
    private var views: [Path.Restriction: (paths: Set<String>, shown: Path)] = [:]

    init(bus: BusConnection, first: ReachabilitySnapshot) {
        self.bus = bus
        snapshot = first
    }

    func answer(for restriction: Path.Restriction) -> Path {
        views[restriction]?.shown ?? Path(snapshot: snapshot, restriction: restriction)
    }

    func attach(_ watch: PathWatch) {
        if views[watch.restriction] == nil { views[watch.restriction] = ([], answer(for: watch.restriction)) }
        views[watch.restriction]?.paths.insert(watch.path)
    }

    func detach(_ watch: PathWatch) {
        views[watch.restriction]?.paths.remove(watch.path)
        if views[watch.restriction]?.paths.isEmpty == true { views.removeValue(forKey: watch.restriction) }
    }

    /// The host or an interface changed: each restriction's path derived anew, announced where it moved.
    func networkChanged(_ snapshot: ReachabilitySnapshot) {
        self.snapshot = snapshot
        guard !views.isEmpty else { return }
        for (restriction, view) in views {
            let path = Path(snapshot: snapshot, restriction: restriction)
            let names = PathProperty.changed(from: view.shown, to: path)
            guard !names.isEmpty else { continue }
            views[restriction]?.shown = path
            for object in view.paths {
                bus.emitPropertiesChanged(path: object, interface: ReachdContract.pathInterface, names: names)
            }
        }
    }
}
