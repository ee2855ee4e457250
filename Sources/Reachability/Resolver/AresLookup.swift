import CAres
#if canImport(Glibc)
import Glibc
#endif

/// One c-ares channel running one `ares_getaddrinfo`: the whole C surface of the resolver.
///
/// A channel per lookup is what makes a hard deadline possible with c-ares 1.18: `ares_cancel`
/// and `ares_destroy` act on a whole channel, so only a channel of its own can be torn down
/// without touching other lookups. It is created with the nameservers of the moment (1.18 has no reinit),
/// so new nameservers apply to the next lookup.
///
/// c-ares calls back into `State` from inside `ares_getaddrinfo`, `ares_process_fd` and
/// `ares_destroy`; the callbacks only record what happened there, and call out only to
/// `willClose`, just before a socket is closed. The owner reads `sockets` and `outcome` after
/// each call returns. Not thread-safe: one thread.
package final class AresLookup {
    /// What the C callbacks write to. A class of its own, apart from the lookup, so that
    /// `ares_destroy` in `deinit` calls back into an object that is not being deinitialised.
    package final class State {
        package var sockets: [Int32: (readable: Bool, writable: Bool)] = [:]
        /// Sockets c-ares closed since the owner last looked (`takeClosed`): a number closed and
        /// opened again names a new socket, whose epoll registration must be made anew.
        package var closed: Set<Int32> = []
        package var outcome: HostResolver.Outcome?
        /// The server each socket was connected to, and whether it is a datagram socket.
        package var peers: [Int32: (server: IPAddress, datagram: Bool)] = [:]
        /// Servers that refused, how (see `SocketCalls`), and the query types they refused: nil
        /// for every type (ICMP refuses the server itself, or an answer did not say its question).
        package var refusals: [IPAddress: (how: String, types: Set<UInt16>?)] = [:]
        /// Told of each socket just before c-ares closes it (see `HostResolver.socketWillClose`).
        package let willClose: ((Int32) -> Void)?

        package init(willClose: ((Int32) -> Void)?) { self.willClose = willClose }
    }

    private let state: State
    private var channel: ares_channel?

    /// Sockets c-ares wants watched, as its socket-state callback last reported them.
    package var sockets: [Int32: (readable: Bool, writable: Bool)] { state.sockets }
    /// The answer, once c-ares gave one (possibly already while starting).
    package var outcome: HostResolver.Outcome? { state.outcome }
    /// The distinct nameservers of this channel.
    package private(set) var servers: Set<IPAddress> = []

    /// The descriptors c-ares closed since the last call (some may be open again by now).
    package func takeClosed() -> Set<Int32> {
        defer { state.closed.removeAll() }
        return state.closed
    }

    /// Every nameserver of the channel refused both families (ICMP port unreachable, or REFUSED
    /// answers to the A and the AAAA query): the lookup cannot succeed, and waiting for c-ares'
    /// retries would turn a clear refusal into a timeout. A server that refused only one family
    /// (dnsmasq with `--address` and no `--local` refuses AAAA) may still answer the other: that
    /// answer is the lookup's. The message names each server and how it refused.
    package var refusal: String? {
        let everyFamily: Set<UInt16> = [Self.typeA, Self.typeAAAA]
        let refusedAll = servers.allSatisfy { server in
            state.refusals[server].map { $0.types?.isSuperset(of: everyFamily) ?? true } ?? false
        }
        guard !servers.isEmpty, refusedAll else { return nil }
        let each = servers.sorted { $0.description < $1.description }.map { "\($0) \(state.refusals[$0]!.how)" }
        return each.count == 1
            ? "the DNS server \(each[0])"
            : "every DNS server refused: " + each.joined(separator: ", ")
    }

    /// Creates a channel asking `servers` with `configuration`'s search list, ndots and rotation,
    /// and starts the lookup of A and AAAA records for `name` in DNS (/etc/hosts is reachd's:
    /// `ResolverFiles`).
    ///
    /// c-ares is never given a file to read. In 1.18.1 `ares_init_options` reads resolv.conf (and
    /// nsswitch.conf when `lookups` is unset) unless every setting it would take from there came
    /// with the options (`ARES_CONFIG_CHECK` in ares_init.c: lookups, sortlist, servers, domains,
    /// ndots, timeout, tries): all of them are given here, the servers as an empty list, then set
    /// with `ares_set_servers_csv`. The lookups are "b" (DNS only): with "f", c-ares fopen(3)s
    /// /etc/hosts at every lookup, on the loop.
    /// - Parameters:
    ///   - timeout: c-ares' first-try timeout per server; it doubles on each later round.
    ///   - tries: rounds over the server list.
    ///   - willClose: told of each of its sockets just before it is closed.
    package init(
        name: String, servers: [IPAddress], configuration: ResolverConfiguration, timeout: Duration, tries: Int32,
        willClose: ((Int32) -> Void)? = nil
    ) {
        state = State(willClose: willClose)
        let context = Unmanaged.passUnretained(state).toOpaque()
        var options = ares_options()
        let mask = ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_SOCK_STATE_CB | ARES_OPT_LOOKUPS | ARES_OPT_SERVERS
            | ARES_OPT_DOMAINS | ARES_OPT_NDOTS | ARES_OPT_SORTLIST | (configuration.rotate ? ARES_OPT_ROTATE : ARES_OPT_NOROTATE)
        options.timeout = Int32(clamping: timeout.wholeMilliseconds)
        options.tries = tries
        options.ndots = configuration.ndots
        options.nservers = 0
        options.nsort = 0
        options.sock_state_cb = { context, fd, readable, writable in
            let state = Unmanaged<State>.fromOpaque(context!).takeUnretainedValue()
            // (fd, 0, 0) is how c-ares says it closed the socket.
            if readable == 0 && writable == 0 {
                state.sockets[fd] = nil
                state.closed.insert(fd)
            } else {
                state.sockets[fd] = (readable != 0, writable != 0)
            }
        }
        options.sock_state_cb_data = context
        let lookups = strdup("b")
        // c-ares copies the domains (ares_strdup) while initialising.
        var domains = configuration.searchList.map { strdup($0) }
        defer {
            free(lookups)
            for domain in domains { free(domain) }
        }
        options.lookups = lookups
        options.ndomains = Int32(domains.count)
        let status = domains.withUnsafeMutableBufferPointer { buffer in
            options.domains = buffer.baseAddress
            return ares_init_options(&channel, &options, mask)
        }
        guard status == ARES_SUCCESS else {
            channel = nil
            state.outcome = .failed("ares_init_options: " + Self.describe(status))
            return
        }
        let list = servers.map(\.description).joined(separator: ",")
        let serversStatus = ares_set_servers_csv(channel, list)
        guard serversStatus == ARES_SUCCESS else {
            destroy()
            state.outcome = .failed("ares_set_servers_csv(\(list)): " + Self.describe(serversStatus))
            return
        }
        ares_set_socket_functions(channel, SocketCalls.table, context)
        self.servers = Set(servers)
        var hints = ares_addrinfo_hints()
        hints.ai_family = AF_UNSPEC
        // NOSORT: no RFC 6724 sorting, which would connect(2) a probe socket per address; the
        // resolver orders addresses itself (IPv4 first).
        hints.ai_flags = ARES_AI_NOSORT
        ares_getaddrinfo(channel, name, nil, &hints, { context, status, _, result in
            defer { if let result { ares_freeaddrinfo(result) } }
            // Cancellation and destruction are ours: the resolver already decided the outcome.
            guard status != ARES_ECANCELLED, status != ARES_EDESTRUCTION else { return }
            let state = Unmanaged<State>.fromOpaque(context!).takeUnretainedValue()
            guard state.outcome == nil else { return }
            state.outcome = AresLookup.outcome(status: status, result: result)
        }, context)
    }

    deinit { destroy() }

    /// When c-ares next needs `processTimers` (a retransmission), relative to now; nil if never.
    package var timerDelay: Duration? {
        guard let channel else { return nil }
        var storage = timeval()
        guard let delay = ares_timeout(channel, nil, &storage) else { return nil }
        return .seconds(delay.pointee.tv_sec) + .microseconds(delay.pointee.tv_usec)
    }

    /// Lets c-ares read from / write to `fd` after the loop saw it ready.
    package func process(fd: Int32, readable: Bool, writable: Bool) {
        guard let channel else { return }
        ares_process_fd(channel, readable ? fd : ARES_SOCKET_BAD, writable ? fd : ARES_SOCKET_BAD)
    }

    /// Lets c-ares run its timers: retransmit, move on to the next server, or give up.
    package func processTimers() {
        guard let channel else { return }
        ares_process_fd(channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD)
    }

    /// Ends the lookup at once: closes its sockets (`sockets` becomes empty) and frees the
    /// channel. An outcome not yet reached stays nil. Never call it from a c-ares callback.
    package func destroy() {
        guard let channel else { return }
        self.channel = nil
        ares_destroy(channel)
    }

    /// Maps a finished lookup to an outcome: every c-ares status has its place.
    private static func outcome(status: Int32, result: UnsafeMutablePointer<ares_addrinfo>?) -> HostResolver.Outcome {
        switch status {
        case ARES_SUCCESS:
            guard let result else { return .notFound }
            let (addresses, ttl) = addresses(in: result.pointee)
            return addresses.isEmpty ? .notFound : .resolved(addresses, ttl: ttl)
        case ARES_ENOTFOUND, ARES_ENODATA:
            return .notFound
        case ARES_ETIMEOUT:
            return .timedOut
        default:
            return .failed(describe(status))
        }
    }

    /// The addresses of an answer, IPv4 first, each once, and the smallest TTL of the records
    /// involved (CNAMEs included: the answer is only as fresh as its least fresh part).
    private static func addresses(in result: ares_addrinfo) -> ([IPAddress], UInt32) {
        var v4: [IPAddress] = []
        var v6: [IPAddress] = []
        var ttl = Int32.max
        var node = result.nodes
        while let current = node?.pointee {
            node = current.ai_next
            guard let socketAddress = current.ai_addr,
                let address = IPAddress.fromSocketAddress(UnsafeRawBufferPointer(start: socketAddress, count: Int(current.ai_addrlen)))?.address
            else { continue }
            switch address {
            case .v4: if !v4.contains(address) { v4.append(address) }
            case .v6: if !v6.contains(address) { v6.append(address) }
            }
            ttl = min(ttl, current.ai_ttl)
        }
        var cname = result.cnames
        while let current = cname?.pointee {
            cname = current.next
            ttl = min(ttl, current.ttl)
        }
        return (v4 + v6, UInt32(clamping: max(0, ttl == .max ? 0 : ttl)))
    }

    /// `ares_strerror` text and the status' C name, e.g. "Timeout while contacting DNS servers (ARES_ETIMEOUT)".
    package static func describe(_ status: Int32) -> String {
        let text = ares_strerror(status).map { String(cString: $0) } ?? "unknown error"
        return "\(text) (\(statusName(status)))"
    }

    private static func statusName(_ status: Int32) -> String {
        switch status {
        case ARES_SUCCESS: "ARES_SUCCESS"
        case ARES_ENODATA: "ARES_ENODATA"
        case ARES_EFORMERR: "ARES_EFORMERR"
        case ARES_ESERVFAIL: "ARES_ESERVFAIL"
        case ARES_ENOTFOUND: "ARES_ENOTFOUND"
        case ARES_ENOTIMP: "ARES_ENOTIMP"
        case ARES_EREFUSED: "ARES_EREFUSED"
        case ARES_EBADQUERY: "ARES_EBADQUERY"
        case ARES_EBADNAME: "ARES_EBADNAME"
        case ARES_EBADFAMILY: "ARES_EBADFAMILY"
        case ARES_EBADRESP: "ARES_EBADRESP"
        case ARES_ECONNREFUSED: "ARES_ECONNREFUSED"
        case ARES_ETIMEOUT: "ARES_ETIMEOUT"
        case ARES_EOF: "ARES_EOF"
        case ARES_EFILE: "ARES_EFILE"
        case ARES_ENOMEM: "ARES_ENOMEM"
        case ARES_EDESTRUCTION: "ARES_EDESTRUCTION"
        case ARES_EBADSTR: "ARES_EBADSTR"
        case ARES_EBADFLAGS: "ARES_EBADFLAGS"
        case ARES_ENONAME: "ARES_ENONAME"
        case ARES_EBADHINTS: "ARES_EBADHINTS"
        case ARES_ENOTINITIALIZED: "ARES_ENOTINITIALIZED"
        case ARES_ELOADIPHLPAPI: "ARES_ELOADIPHLPAPI"
        case ARES_EADDRGETNETWORKPARAMS: "ARES_EADDRGETNETWORKPARAMS"
        case ARES_ECANCELLED: "ARES_ECANCELLED"
        case ARES_ESERVICE: "ARES_ESERVICE"
        default: "ares status \(status)"
        }
    }

    /// `ares_library_init`, once per process (it is not thread-safe, and its effect is global);
    /// a Swift global is initialised exactly once, under a lock.
    package static let libraryStatus: Int32 = ares_library_init(ARES_LIB_INIT_ALL)
}
