/// The Unix user behind each bus connection that calls a service, learnt without blocking: one
/// asynchronous `GetConnectionUnixUser` per connection (callers that ask meanwhile wait for the
/// same answer), kept while the connection lives and forgotten when `NameOwnerChanged` says it
/// left. sd-bus attaches no credentials to messages it did not ask the bus to augment, and a
/// synchronous `sd_bus_get_name_creds` would stall the daemon's loop for a bus round trip.
///
/// A service answers each caller as that caller would be routed, and holds limits per user, from
/// this one cache. Loop-thread only, like the bus it uses.
package final class CallerIdentities {
    private let bus: BusConnection
    private var known: [String: UInt32] = [:]
    private var pending: [String: Lookup] = [:]
    private var departures: BusSlot?
    /// `GetConnectionUnixUser` calls sent so far: one per connection, however often it calls.
    public private(set) var lookups: UInt64 = 0
    /// Told the unique name of each connection whose user is asked of the bus (a debug log).
    public var asking: ((String) -> Void)?
    /// Told the unique name of each connection that left the bus (what it held is undone).
    public var departed: ((String) -> Void)?

    private struct Lookup {
        var slot: BusSlot?
        var waiting: [(Result<UInt32, BusError>) -> Void]
        /// The connection left while its lookup was in flight: answer the waiters, cache nothing.
        var departed = false
    }

    public init(bus: BusConnection) throws(BusError) {
        self.bus = bus
        departures = try bus.matchSignal(
            sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "NameOwnerChanged"
        ) { [unowned self] message in self.ownerChanged(message) }
    }

    /// Connections whose user is known now.
    public var count: Int { known.count }

    /// The Unix user of connection `name` when already known.
    public func user(of name: String) -> UInt32? { known[name] }

    /// Calls `body` with the Unix user of connection `name` (a unique name such as `:1.42`): at
    /// once when known, else when the bus answers, on the loop. A failure is the error a caller
    /// is answered with.
    public func withUser(of name: String, _ body: @escaping (Result<UInt32, BusError>) -> Void) {
        if let uid = known[name] { return body(.success(uid)) }
        if pending[name] != nil {
            pending[name]?.waiting.append(body)
            return
        }
        pending[name] = Lookup(waiting: [body])
        do {
            let slot = try bus.callAsync(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "GetConnectionUnixUser", { call throws(BusError) in try call.append(name) }
            ) { [unowned self] reply in
                self.learned(name, reply.flatMap { message in Result { () throws(BusError) in try message.readUInt32() } })
            }
            lookups += 1
            asking?(name)
            pending[name]?.slot = slot
        } catch {
            learned(name, .failure(error))
        }
    }

    /// Answers method `call` as its sender's Unix user: `answer` runs at once when the user is
    /// known, and its reply is the call's; else the call is answered later, once the bus told
    /// the user, with `answer`'s reply or error (or with the bus's error when it cannot tell).
    public func answering(
        _ call: BusMessage, _ answer: @escaping (UInt32) throws(BusError) -> BusReply
    ) throws(BusError) -> BusReply {
        let sender = try Self.sender(of: call)
        if let uid = known[sender] { return try answer(uid) }
        let owned = OwnedBusMessage(retaining: call)
        withUser(of: sender) { [bus] uid in
            do throws(BusError) {
                if case let .now(build) = try answer(uid.get()) { try bus.reply(to: owned.message, build) }
            } catch {
                bus.reply(to: owned.message, error: error)
            }
        }
        return .later
    }

    /// The unique name of `call`'s sender: who is answered for and followed. A call with no
    /// sender (a direct connection) has no Unix user to answer for, and is refused.
    public static func sender(of call: BusMessage) throws(BusError) -> String {
        guard let sender = call.sender else {
            throw BusError(name: "org.freedesktop.DBus.Error.AccessDenied", message: "a call with no sender has no Unix user to answer for")
        }
        return sender
    }

    private func learned(_ name: String, _ uid: Result<UInt32, BusError>) {
        guard let lookup = pending.removeValue(forKey: name) else { return }
        if case let .success(uid) = uid, !lookup.departed { known[name] = uid }
        let answer = uid.mapError { error in
            BusError(name: "org.freedesktop.DBus.Error.Failed", message: "cannot learn the Unix user of \(name): \(error.message)")
        }
        for body in lookup.waiting { body(answer) }
    }

    /// `NameOwnerChanged(name, old_owner, new_owner)`: a unique name with no new owner is a
    /// connection gone for good (unique names are never reused).
    private func ownerChanged(_ message: BusMessage) {
        guard let name = try? message.readString(), name.hasPrefix(":"),
            (try? message.readString()) != nil, let newOwner = try? message.readString(), newOwner.isEmpty
        else { return }
        known.removeValue(forKey: name)
        pending[name]?.departed = true
        departed?(name)
    }
}
