import Reachability
import Synchronization

/// What the registry holds of every watch, target or path: who owns it, as which user, and
/// the registration that serves its object.
protocol HeldWatch: BusObject {
    var path: String { get }
    var owner: String { get }
    var uid: UInt32 { get }
    var slot: BusSlot? { get set }
}

/// One client's watch: `/org/reachd/Reachability1/watch/N`, interface
/// `org.reachd.Reachability1.Watch`, with its own PropertiesChanged whenever its answer changes.
/// Watches on the same target share one answer and one DNS lookup (`WatchTargets`).
final class Watch: HeldWatch {
    static let vtable = BusVTable(ReachdContract.watchMembers)

    let path: String
    let owner: String
    /// The Unix user of the owner: its answer is routed as this user's traffic, and it counts
    /// toward this user's MaxWatchesPerUser.
    let uid: UInt32
    let target: String
    private unowned let targets: WatchTargets
    var slot: BusSlot?

    /// Watch objects alive, logged at exit (`--verbose`): a watch kept alive by a reference
    /// cycle shows there. Counted at creation and release only, never per call.
    static let alive = Atomic<Int>(0)

    init(path: String, owner: String, uid: UInt32, target: String, targets: WatchTargets) {
        self.path = path
        self.owner = owner
        self.uid = uid
        self.target = target
        self.targets = targets
        Self.alive.add(1, ordering: .relaxed)
    }

    deinit { Self.alive.subtract(1, ordering: .relaxed) }

    func call(_ method: String, _ message: BusMessage) throws(BusError) -> BusReply {
        throw BusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "no method \(method)")
    }

    func property(_ name: String, into reply: BusMessage) throws(BusError) {
        let result = targets.answer(for: target, uid: uid)
        switch name {
        case "Target": try reply.append(target)
        case "Flags": try reply.append(result.flags.rawValue)
        case "Interface": try reply.append(result.interface)
        case "Reason": try reply.append(result.reason?.rawValue ?? "")
        default: throw BusError(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no property \(name)")
        }
    }
}
