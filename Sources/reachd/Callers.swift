import Reachability

/// The bus clients that hold something of reachd's (watches, host checks in flight), and what to
/// undo when each leaves the bus. Through it, what a client asked for belongs to that client and
/// dies with it. Who a client is (its Unix user) and when it leaves both come from the one
/// `CallerIdentities`, which asks the bus once per connection, without blocking, and follows
/// every departure with one NameOwnerChanged match.
final class Callers {
    /// The parts of reachd that hold things for clients, each with its own undo on departure.
    enum Part: Hashable {
        case watches, checks
    }

    let identities: CallerIdentities
    private var clients: [String: Client] = [:]

    /// Clients recorded now: those that hold something, or wait to learn their user.
    var count: Int { clients.count }

    private final class Client {
        /// What each part undoes when the client leaves.
        var departures: [Part: () -> Void] = [:]
        /// Calls waiting for the client's user: it is not forgotten while any waits, so that each
        /// still finds it when the answer comes.
        var waiting = 0
        /// It left the bus: calls still waiting for its user are dropped.
        var gone = false
    }

    init(identities: CallerIdentities) {
        self.identities = identities
        identities.departed = { [unowned self] name in self.left(name) }
    }

    /// Follows the sender of `message` and runs `body` with the caller: at once when its Unix
    /// user is known, else once the bus answered. `body` does not run if the client leaves first.
    /// Throws for a call with no sender (no connection to follow).
    func withCaller(of message: BusMessage, _ body: @escaping (Result<Caller, BusError>) -> Void) throws(BusError) {
        let sender = try CallerIdentities.sender(of: message)
        let client = clients[sender] ?? Client()
        clients[sender] = client
        client.waiting += 1
        identities.withUser(of: sender) { [unowned self] uid in
            client.waiting -= 1
            guard !client.gone else { return }  // it left meanwhile: nothing to answer
            body(uid.map { Caller(name: sender, uid: $0) })
            self.forgetIfIdle(sender)
        }
    }

    /// The user a call is answered as: `named` (CheckHostAsUser), which only root may choose
    /// freely, or the caller itself.
    static func routedAs(_ named: UInt32?, caller uid: UInt32) throws(BusError) -> UInt32 {
        guard let named, named != uid else { return uid }
        guard uid == 0 else {
            throw BusError(name: "org.freedesktop.DBus.Error.AccessDenied", message: "only root may ask as another user (uid \(named)); you are uid \(uid)")
        }
        return named
    }

    /// `undo` runs once, when `sender` leaves the bus, unless `release` comes first; it replaces
    /// what `part` set before.
    func onDeparture(of sender: String, _ part: Part, _ undo: @escaping () -> Void) {
        clients[sender]?.departures[part] = undo
    }

    /// `part` holds nothing more for `sender`: a client that holds nothing is forgotten, so the
    /// table stays as small as the clients that hold something.
    func release(_ sender: String, _ part: Part) {
        clients[sender]?.departures[part] = nil
        forgetIfIdle(sender)
    }

    /// Forgets `sender` if no part holds anything for it (a caller that only asked its user).
    func forgetIfIdle(_ sender: String) {
        guard let client = clients[sender], client.departures.isEmpty, client.waiting == 0 else { return }
        clients[sender] = nil
    }

    /// At stop: forgets every client, running no undo.
    func releaseAll() {
        for client in clients.values { client.gone = true }
        clients = [:]
    }

    private func left(_ sender: String) {
        guard let client = clients.removeValue(forKey: sender) else { return }
        client.gone = true
        for undo in client.departures.values { undo() }
    }
}

/// Who made a call, learnt once per call: its connection's unique bus name (what it holds dies
/// with that connection) and its Unix user (its shares and limits, and how it is routed).
struct Caller: Hashable {
    let name: String
    let uid: UInt32
}
