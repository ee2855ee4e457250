import Reachability

/// One CheckHost call from its receipt to its reply: the message it answers, its caller once the
/// bus told who it is, and where it stands. `HostCheckCalls` holds its slot in the calls' ledger
/// exactly while it runs; the transitions are checked, so a reply can go out only once and a slot
/// be given back only once.
final class CheckHostCall {
    enum State: Equatable {
        /// Its caller's Unix user is being asked of the bus.
        case received
        /// Holds a slot while the core checks the host: its check's id once the core gave one (an
        /// answer the core has at once comes before that).
        case running(check: UInt64?)
        /// Replied to, with an answer, a refusal or an error.
        case replied
        /// Its caller left the bus: the check was cancelled, and no reply goes out.
        case abandoned
    }

    let call: OwnedBusMessage
    let host: String
    let timeout: Duration
    let received = ContinuousClock.now
    /// Known from `running` on: who asked, and the user whose routing answers (the caller's,
    /// or the one root named with CheckHostAsUser).
    private(set) var caller = Caller(name: "", uid: 0)
    private(set) var routedAs: UInt32 = 0
    private(set) var state = State.received

    init(call: OwnedBusMessage, host: String, timeout: Duration) {
        self.call = call
        self.host = host
        self.timeout = timeout
    }

    var isRunning: Bool {
        if case .running = state { return true }
        return false
    }

    /// The caller is known and may run the check: its routing is settled.
    func run(as caller: Caller, routedAs: UInt32) {
        move(to: .running(check: nil))
        self.caller = caller
        self.routedAs = routedAs
    }

    func move(to next: State) {
        precondition(Self.allows(state, next), "CheckHost(\(host.inertExcerpt())) cannot go from \(state) to \(next)")
        state = next
    }

    static func allows(_ from: State, _ to: State) -> Bool {
        switch (from, to) {
        case (.received, .running(check: nil)), (.received, .replied): true
        case (.running(check: nil), .running(check: .some)): true
        case (.running, .replied), (.running, .abandoned): true
        default: false
        }
    }
}
