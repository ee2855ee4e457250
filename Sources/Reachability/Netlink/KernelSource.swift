#if canImport(Glibc)
import Glibc
#endif

/// What the kernel says over rtnetlink, as inputs for a `NetworkState` it does not own: the
/// state's owner (`ReachabilityCore`) hands the state in to be read (which links are known,
/// which neighbours are gateways) and takes each `NetworkInput` returned. Knows nothing of event
/// loops: whoever drives it watches `monitorDescriptor` (`readAvailable`) and
/// `requestDescriptor` (`continueDump`), and honours `resyncDeadline` as a timer
/// (`resyncIfDue`): reachd's sd-event loop, or `ReachabilityMonitor`'s thread.
///
/// Sync protocol: the monitor socket joins the multicast groups before the first dump, so no
/// change is lost between dump and monitoring; a dump is taken on a separate non-blocking request
/// socket (one dump at a time: the kernel answers EBUSY otherwise), links then addresses then
/// routes, each redone when the kernel flags it interrupted, read by the loop as the replies come
/// (`continueDump`) within `Options.dumpTimeout`, so the loop keeps serving everything else meanwhile.
/// Events queued meanwhile stay in the monitor socket and are applied after the dump; applying a
/// fact again is idempotent, so the order settles to the truth.
///
/// After an overrun (ENOBUFS), a truncated or a malformed datagram the queue is no longer a
/// complete history: messages are missing from it, so its last word on an object may not be the
/// latest. The monitor socket is then read empty and everything read discarded (the kernel drops
/// every new message until the queue is empty, so nothing after the loss is kept either), and a
/// dump taken after that replaces the state; only what arrives after the drain is applied.
/// The source keeps only what reading needs: sockets, the dump in flight, counters.
///
/// The host's path is the kernel's own answer: after every batch (and every dump) the source asks
/// RTM_GETROUTE for one global destination per family (`internetDestinations`), so split defaults,
/// policy rules (wg-quick, Tailscale) and rule changes move the host's answer exactly as they move
/// traffic. Mirroring the FIB and the rules instead would have to re-implement every selector the
/// kernel has (fwmark, uidrange, suppress_prefixlength, l3mdev, nexthop objects...) and drift from
/// it; two lookups per batch cost about 0.1-0.2 ms and cannot block.
package final class KernelSource {
    package struct Options: Sendable {
        package var namespacePath: String?
        package var sysfs: SysfsReader = SysfsReader()
        /// 8 MiB: a burst of thousands of link changes fits. Tests shrink it to force overruns.
        package var receiveBufferBytes: Int32 = 8 << 20
        /// A monitor socket handed over (reachd.socket); nil to open one.
        package var adoptedMonitorSocket: Int32?
        /// Resyncs after overruns happen at most this often, so a storm cannot make us dump in a loop.
        package var minimumResyncInterval: Duration = .milliseconds(100)
        /// rfkill's event device; nil to read radio switches from sysfs alone (`RadioFollower`).
        package var rfkillDevicePath: String? = "/dev/rfkill"
        /// The kernel answers dumps at once; this bounds a resync's dump when it does not (a busy
        /// RTNL lock: asked again later). The start's waits longer (`startLimit`). Tests shorten it.
        package var dumpTimeout: Duration = .seconds(2)

        /// Every option at its default; the caller sets what it changes.
        package init() {}
    }

    /// What happened to the source that is worth a log line or a counter.
    package enum Incident: Sendable, Hashable, CustomStringConvertible {
        case overrun
        case truncatedDatagram
        case malformed(NetlinkDecodingError)
        case foreignSender
        case resynced
        case resyncFailed(SystemError)
        case refusedAnnouncement(RefusedAnnouncement)

        /// The journal's line for it.
        package var description: String {
            switch self {
            case .overrun: "netlink receive buffer overrun (ENOBUFS): state may be stale, resyncing"
            case .truncatedDatagram: "netlink datagram truncated: resyncing"
            case let .malformed(error): "ignoring malformed netlink message: \(error); resyncing"
            case .foreignSender: "ignoring a netlink message not sent by the kernel"
            case .resynced: "resynced from a fresh dump"
            case let .resyncFailed(error): "resync failed: \(error); will retry"
            case let .refusedAnnouncement(refusal): refusal.description
            }
        }
    }

    private let monitor: NetlinkSocket
    package let requests: NetlinkSocket
    /// Route lookups (RTM_GETROUTE) for the internet paths and the nameservers.
    package let routes: RouteQuery
    let options: Options
    package var sequence: UInt32 = 0
    package var buffer = [UInt8](repeating: 0, count: 64 << 10)
    package var needsResync = false
    package var lastResync: ContinuousClock.Instant?
    package var incidents: [Incident] = []
    /// The routers whose refused announcement (of each option, per link) was already said
    /// (`Incident.refusedAnnouncement`): at most `refusingRoutersSaid`, as any host on a link
    /// can send advertisements from as many source addresses as it likes.
    private var refusingRouters: Set<RefusingRouter> = []
    private struct RefusingRouter: Hashable {
        var option: RefusedAnnouncement.Option
        var interfaceIndex: Int32
        var router: IPAddress?
    }
    package static let refusingRoutersSaid = 64
    package var resyncCount = 0
    /// The resync dump in flight (see KernelSource+Dump.swift).
    package var dump: Dump?
    package var lastDumpFailure: SystemError?
    package private(set) var overrunCount = 0
    /// The nameservers whose routes every batch looks up (`nameserverEvents`), set by the core.
    package private(set) var nameservers: [IPAddress] = []
    /// The rfkill state of Wi-Fi and cellular links.
    package let radios: RadioFollower
    /// Routes the last dump listed past their expiry: the kernel keeps them until its garbage
    /// collection, and revives one without a word when its router advertises again
    /// (KernelSource+Lifetimes).
    package var keptLapsed: Set<Route.Key> = []

    /// The destinations whose path stands for "the internet": two addresses no one routes
    /// specially (k.root-servers.net's, operated by RIPE NCC), never sent a packet: the kernel is
    /// only asked which route it would take. A VPN that carries everything (0/1 + 128/1, or a
    /// rule into its own table) carries these too; a split tunnel for private ranges does not.
    package static let internetDestinations: [(family: AddressFamily, address: IPAddress)] = [
        (.ipv4, .v4(0xC100_0E81)),  // 193.0.14.129
        (.ipv6, .v6(0x2001_07FD_0000_0000, 1)),  // 2001:7fd::1
    ]

    package init(options: Options) throws(SystemError) {
        self.options = options
        if let fd = options.adoptedMonitorSocket {
            // PID 1 sized its buffer (past rmem_max): setting it here could only shrink it.
            monitor = try NetlinkSocket(adopting: fd)
        } else {
            monitor = try NetlinkSocket(nonBlocking: true, namespacePath: options.namespacePath)
            monitor.setReceiveBuffer(bytes: options.receiveBufferBytes)
        }
        // The socket unit binds the link, address and route groups; the rule, neighbour and ND option
        // groups join here.
        try monitor.join(groups: NetlinkSocket.reachabilityGroups)
        requests = try NetlinkSocket(nonBlocking: true, namespacePath: options.namespacePath)
        routes = try RouteQuery(namespacePath: options.namespacePath)
        radios = RadioFollower(sysfs: options.sysfs, devicePath: options.rfkillDevicePath)
    }

    package var monitorDescriptor: Int32 { monitor.fd }
    /// The dump socket, for the loop to watch for input while `isDumping` (see `continueDump`).
    package var requestDescriptor: Int32 { requests.fd }
    /// A dump is under way: the monitor socket is left unread until it ends, so that what the
    /// kernel queues meanwhile is applied after the dump, as it happened after it.
    package var isDumping: Bool { dump != nil }

    /// The receive buffer the kernel granted the monitor socket, in bytes (its bookkeeping
    /// doubles what was asked).
    package var receiveBufferBytes: Int { Int(monitor.receiveBufferSize) }

    /// Takes the first complete picture, waiting for it: the input that makes `state` whole. The
    /// start's dump may take up to `startLimit`, not `Options.dumpTimeout`: a host tearing down a
    /// namespace of 10,000 veths holds the kernel's RTNL lock for 3 s, and a CI run's hundreds of
    /// namespaces kept each dump past 2 s for a minute, so reachd, reachctl or a PathMonitor
    /// starting then gave up ("rtnetlink dump timed out"), and asking again each 2 s only began
    /// the same wait anew.
    package func synchronize(knowing state: borrowing NetworkState) throws(SystemError) -> NetworkInput? {
        // A socket from reachd.socket holds what the kernel queued since it was bound (at boot,
        // or before the last reachd exited), perhaps up to an overrun: all older than this dump.
        discardQueue()
        beginDump(timeout: Self.startLimit)
        do {
            return try completeDump(knowing: state)
        } catch where error.errno == ETIMEDOUT {
            throw SystemError("the kernel did not finish a dump of its links, addresses and routes in \(Self.startLimit)", errno: ETIMEDOUT)
        }
    }

    /// How long a start waits for the kernel's first complete dump.
    package static let startLimit: Duration = .seconds(30)

    /// Hands the incidents noted since the last call to the caller (for logging).
    package func takeIncidents() -> [Incident] {
        defer { incidents.removeAll() }
        return incidents
    }

    /// When the loop must call `resyncIfDue`: the dump's deadline while one runs, else when a
    /// pending resync may start; nil when none is pending.
    package var resyncDeadline: ContinuousClock.Instant? {
        if let dump { return dump.deadline }
        guard needsResync else { return nil }
        return lastResync.map { $0 + options.minimumResyncInterval } ?? .now
    }

    /// At most this many datagrams are read per call, so a storm of kernel messages cannot keep
    /// the loop here forever: what is left keeps the socket readable and is read on the next turn,
    /// after the loop has served its other sources.
    package static let datagramsPerTurn = 256

    /// Reads what is queued on the monitor socket (up to `datagramsPerTurn` datagrams) as one
    /// batch of facts; starts a due resync. Reads nothing while a dump runs. Never blocks.
    /// `state`: what is known, to tell a gateway's neighbour and a link seen before.
    package func readAvailable(knowing state: borrowing NetworkState) -> NetworkInput? {
        guard !isDumping else { return nil }
        var events: [NetworkEvent] = []
        var heardRouter = false
        read: for _ in 0..<Self.datagramsPerTurn {
            do {
                switch try monitor.receive(into: &buffer) {
                case .wouldBlock:
                    break read
                case .foreign:
                    incidents.append(.foreignSender)
                case let .datagram(count, truncated):
                    if truncated { incidents.append(.truncatedDatagram) }
                    let batch = buffer.withUnsafeBytes {
                        NetlinkDecoder.decode(UnsafeRawBufferPointer(rebasing: $0[..<min(count, $0.count)]), received: .now)
                    }
                    incidents += batch.errors.map(Incident.malformed)
                    if truncated || !batch.errors.isEmpty {
                        discardQueue()
                        events.removeAll()
                        break read
                    }
                    for decoded in batch.messages {
                        append(decoded, to: &events, knowing: state)
                        if decoded.message.mayComeFromRouterAdvertisement { heardRouter = true }
                    }
                }
            } catch {
                // ENOBUFS: the kernel dropped messages. The socket stays usable; the state is stale.
                if error.errno == ENOBUFS {
                    incidents.append(.overrun)
                    overrunCount += 1
                }
                discardQueue()
                events.removeAll()
                break read
            }
        }
        if !isDumping, let deadline = resyncDeadline, deadline <= .now {
            beginDump()
            return nil
        }
        if heardRouter, mayReviveLapsedRoute {
            beginDump(confirmingLifetimes: true, holding: events)
            return nil
        }
        guard !events.isEmpty else { return nil }
        // A gateway's ARP/ND state moves no route: a batch of nothing else needs no route lookups
        // (a host on the link can make the kernel tell of its claims a thousand times a second).
        guard !events.allSatisfy(\.isNeighbourFact) else { return .events(events) }
        return .events(events + internetPathEvents() + nameserverEvents())
    }

    /// Reads the monitor socket empty and throws away what it held (see the type's comment), and
    /// marks the state for a resync. Bounded: the kernel queues nothing new until it is empty.
    private func discardQueue() {
        needsResync = true
        while true {
            do {
                if case .wouldBlock = try monitor.receive(into: &buffer) { return }
            } catch {
                if error.errno != ENOBUFS { return }
            }
        }
    }

    /// The kernel's answers for the internet destinations, as Engine facts.
    package func internetPathEvents() -> [NetworkEvent] {
        Self.internetDestinations.map { family, address in
            // uid 0 explicitly: the host's answer is the system's view, whoever runs reachd.
            .internetPath(family: family, route: (try? routes.lookup(address, uid: 0))?.route(family: family))
        }
    }

    /// New nameservers (resolv.conf changed): their routes, as one batch; nil when the same.
    package func setNameservers(_ servers: [IPAddress]) -> NetworkInput? {
        guard servers != nameservers else { return nil }
        nameservers = servers
        return .events(nameserverEvents())
    }

    /// The kernel's answers for the nameservers, as one Engine fact.
    package func nameserverEvents() -> [NetworkEvent] {
        let answers = nameservers.map { server in
            NameserverRoute(address: server, route: (try? routes.lookup(server, uid: 0))?.route(family: server.family))
        }
        return [.nameservers(answers)]
    }

    private func append(_ decoded: DecodedMessage, to events: inout [NetworkEvent], knowing state: borrowing NetworkState) {
        switch decoded.message {
        case let .link(link):
            let device = deviceFacts(for: link, alsoKnown: [:], knowing: state)
            events.append(.link(link, device: device))
            events += radios.events(for: link, kind: kind(of: link, device: device, knowing: state))
        case let .linkRemoved(link):
            radios.forget(index: link.index)
            events.append(.linkRemoved(index: link.index))
        case let .address(address): events.append(.address(address))
        case let .addressRemoved(address): events.append(.addressRemoved(address))
        case let .route(route): events.append(.route(route, replace: decoded.header.isReplace))
        case let .routeRemoved(route):
            keptLapsed.remove(route.key)
            events.append(.routeRemoved(route))
        case .ruleChanged: events.append(.rulesChanged)
        // Every neighbour of every link comes; only a gateway's entry becomes a fact, so a
        // busy LAN's ARP traffic costs a dictionary lookup, not a batch and its route lookups.
        case var .neighbour(neighbour):
            guard state.isGateway(neighbour.address, on: neighbour.interfaceIndex) else { return }
            neighbour.received = .now  // its answer's age is counted from here (`Neighbour.answered`)
            events.append(.neighbour(neighbour))
        case let .neighbourRemoved(neighbour):
            if state.isGateway(neighbour.address, on: neighbour.interfaceIndex) { events.append(.neighbourRemoved(neighbour)) }
        case let .announcedPortal(portal): events.append(.announcedPortal(portal, received: .now))
        case let .nat64Prefix(announced): events.append(.nat64Prefix(announced, received: .now))
        case let .refusedAnnouncement(refusal):
            note(refusal)
        case .done, .error, .ignored: break
        }
    }

    /// Says a refused announcement once per router: a router repeating it every few seconds must
    /// not flood the journal.
    package func note(_ refusal: RefusedAnnouncement) {
        guard refusingRouters.count < Self.refusingRoutersSaid else { return }
        let router = RefusingRouter(option: refusal.option, interfaceIndex: refusal.interfaceIndex, router: refusal.router)
        if refusingRouters.insert(router).inserted { incidents.append(.refusedAnnouncement(refusal)) }
    }

    /// The kind `link` is classified as, with the sysfs facts just read (nil: those known).
    package func kind(of link: Link, device: DeviceFacts?, knowing state: borrowing NetworkState) -> InterfaceKind {
        if device == nil, let known = state.links[link.index] { return known.classification.kind }
        return state.classifier.classify(link, device: device ?? DeviceFacts()).kind
    }

    /// What /dev/rfkill queued, as one batch (see `RadioFollower`); nil when nothing.
    package func readRadios() -> NetworkInput? {
        let events = radios.readDevice()
        return events.isEmpty ? nil : .events(events)
    }

    /// sysfs is read only for links not seen before under this name (a flapping link costs
    /// nothing), and only when its facts could matter (not for a veth, bridge, tun...).
    package func deviceFacts(for link: Link, alsoKnown: [Int32: String], knowing state: borrowing NetworkState) -> DeviceFacts? {
        if state.links[link.index]?.link.name == link.name || alsoKnown[link.index] == link.name { return nil }
        guard Classifier.needsDeviceFacts(link) else { return DeviceFacts() }
        return options.sysfs.deviceFacts(forInterface: link.name)
    }
}
