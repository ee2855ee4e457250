import Reachability

/// The bus clients that hold something of reachd's (watches, host checks in flight): each one's
/// Unix user, learnt from the bus without blocking, and what to undo when it leaves the bus
/// (sd_bus_track). Through it, what a client asked for belongs to that client and dies with it.
final class Callers {
    /// The parts of reachd that hold things for clients, each with its own undo on departure.
    enum Part: Hashable {
        case watches, checks
    }

    private let bus: BusConnection
    private var clients: [String: Client] = [:]

    private final class Client {
        let track: BusTrack
        var uid: UInt32?
        /// The GetConnectionUnixUser call in flight, and who waits for its answer.
        var lookup: BusSlot?
        var waiting: [(Result<UInt32, BusError>) -> Void] = []
        /// What each part undoes when the client leaves.
        var departures: [Part: () -> Void] = [:]

        init(track: BusTrack) { self.track = track }
    }

    init(bus: BusConnection) { self.bus = bus }

    /// Tracks the sender of `message` and runs `body` with its Unix user: at once when known,
    /// else once the bus answered GetConnectionUnixUser (asked asynchronously: the bus attaches
    /// no credentials to messages, and a synchronous call would block the loop). `body` does not
    /// run if the client leaves first.
    func withUser(of message: BusMessage, _ body: @escaping (Result<UInt32, BusError>) -> Void) throws(BusError) {
        let sender = message.sender ?? ""
        let client = try self.client(sender)
        try client.track.add(senderOf: message)
        if let uid = client.uid { return body(.success(uid)) }
        client.waiting.append(body)
        guard client.lookup == nil else { return }
        client.lookup = try bus.callAsync(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "GetConnectionUnixUser", { call throws(BusError) in try call.append(sender) }
        ) { [unowned self] result in
            self.learned(sender, result.flatMap { reply in Result { () throws(BusError) in try reply.readUInt32() } })
        }
    }

    /// `undo` runs once, when `sender` leaves the bus, unless `release` comes first; it replaces
    /// what `part` set before.
    func onDeparture(of sender: String, _ part: Part, _ undo: @escaping () -> Void) {
        clients[sender]?.departures[part] = undo
    }

    /// `part` holds nothing more for `sender`: a client that holds nothing is forgotten (its
    /// tracking too), so the table stays as small as the clients that hold something.
    func release(_ sender: String, _ part: Part) {
        guard let client = clients[sender] else { return }
        client.departures[part] = nil
        if client.departures.isEmpty, client.lookup == nil { clients[sender] = nil }
    }

    /// Forgets `sender` if no part holds anything for it (a caller that only asked its user).
    func forgetIfIdle(_ sender: String) {
        guard let client = clients[sender], client.departures.isEmpty, client.lookup == nil else { return }
        clients[sender] = nil
    }

    /// At stop: forgets every client, running no undo.
    func releaseAll() { clients = [:] }

    private func client(_ sender: String) throws(BusError) -> Client {
        if let known = clients[sender] { return known }
        let track = try BusTrack(bus: bus) { [unowned self] in self.left(sender) }
        let client = Client(track: track)
        clients[sender] = client
        return client
    }

    private func left(_ sender: String) {
        guard let client = clients.removeValue(forKey: sender) else { return }
        client.waiting = []
        for undo in client.departures.values { undo() }
    }

    /// The bus told `sender`'s Unix user (or could not): everyone waiting for it hears.
    private func learned(_ sender: String, _ uid: Result<UInt32, BusError>) {
        guard let client = clients[sender] else { return }  // it left meanwhile: nothing to answer
        let waiting = client.waiting
        client.waiting = []
        client.lookup = nil
        if case let .success(uid) = uid { client.uid = uid }
        let failed = uid.mapError { error in
            BusError(name: "org.freedesktop.DBus.Error.Failed", message: "cannot learn the Unix user of \(sender): \(error.message)")
        }
        for body in waiting { body(failed) }
        if client.departures.isEmpty, clients[sender] === client { clients[sender] = nil }
    }
}
