import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// How a host check's addresses are routed: each address is looked up in the kernel once, as
/// the traffic of whoever asked would be, so no caller routes an answer a second time.
package enum HostRouting: Sendable, Equatable {
    /// As this process's own traffic (in-process, the caller's).
    case asThisProcess
    /// As user `uid`'s traffic (RTA_UID: `ip rule ... uidrange`): reachd's callers.
    case asUser(UInt32)
    /// Not at all: the addresses only, for a caller that routes them per user itself (reachd's
    /// watches share one lookup between users and route it once for each).
    case none
}

/// A host check handed to the loop that runs host checks. `completion` runs exactly once, on
/// that loop, with the answer or `CheckCancelled`.
package struct HostCheckRequest: Sendable {
    package let id: UInt64
    package let name: String
    /// Whose check it is: its lookup counts against that owner's share and rate.
    package let owner: LookupOwner
    /// How the answer's addresses are routed.
    package let routing: HostRouting
    package let deadline: ContinuousClock.Instant
    package let completion: @Sendable (Result<CheckResult, CheckCancelled>) -> Void

    package init(
        id: UInt64, name: String, owner: LookupOwner = .system, routing: HostRouting = .asThisProcess,
        deadline: ContinuousClock.Instant, completion: @escaping @Sendable (Result<CheckResult, CheckCancelled>) -> Void
    ) {
        self.id = id
        self.name = name
        self.owner = owner
        self.routing = routing
        self.deadline = deadline
        self.completion = completion
    }
}

/// Why a host check ended without an answer: cancelled, or refused by the per-user lookup rate.
package struct CheckCancelled: Error, CustomStringConvertible {
    /// Why the check was refused (a limit); nil when it was cancelled.
    public var refusal: String?

    package init(refusal: String? = nil) { self.refusal = refusal }

    public var description: String { refusal ?? "the check was cancelled" }
}

/// Host checks on the core's loop: cache, the "is DNS even routable" pre-check, the resolver
/// (whose sockets and deadline it registers on the loop itself), and the evaluation of every
/// answer's addresses. Loop-thread only.
package final class HostChecks {
    /// Evaluates addresses with the kernel's routes (as `uid`'s traffic; nil: this process's)
    /// and the Engine's link states.
    package typealias Evaluate = (_ addresses: [IPAddress], _ target: String, _ uid: UInt32?) -> CheckResult

    private var resolver: HostResolver?
    private var resolverError: String?
    private var options: HostResolver.Options?
    /// Settings from a reload, applied once no check is waiting for DNS.
    private var pendingOptions: HostResolver.Options?
    private let evaluate: Evaluate
    private var cache: HostCache
    private var running: [UInt64: (request: HostCheckRequest, lookup: HostResolver.RequestID)] = [:]
    /// Checks running now, each with its lookup.
    package var runningCount: Int { running.count }
    private var sources: ResolverSources!
    /// New lookups per user; nil: no bound (the in-process monitor serves one user).
    package var rate: LookupRate?

    /// Shared with the nameserver fact, so that a fault of resolv.conf is said once.
    private let files: ResolverFiles?

    /// `options` nil: every host check answers dnsFailure. `warn` hears of sockets the loop refused.
    /// `files`: resolv.conf and /etc/hosts as the core reads them; nil reads them apart.
    package init(
        options: HostResolver.Options?, files: ResolverFiles? = nil, rate: LookupRate.Settings? = nil,
        loop: any EventLoopProtocol, warn: @escaping (String) -> Void, evaluate: @escaping Evaluate
    ) {
        self.evaluate = evaluate
        self.files = files
        self.rate = rate.map(LookupRate.init)
        cache = HostCache(negativeLifetime: options?.negativeCacheTime ?? HostCache.negativeTTL)
        sources = nil
        sources = ResolverSources(loop: loop, warn: warn) { [unowned self] in
            self.resolver?.processTimeouts()
            self.sync()
        } ready: { [unowned self] fd, revents in
            self.resolver?.process(fd: fd, readable: revents.canRead, writable: revents.contains(.writable))
            self.sync()
        }
        startResolver(options)
    }

    /// Lookups in a row that sent queries and got no answer before their deadline (stall
    /// evidence); any answer, even NXDOMAIN, resets it.
    package var consecutiveDNSTimeouts: Int { resolver?.consecutiveTimeouts ?? 0 }
    /// Told when the count of reachd's own lookups that timed out in a row changes: stall
    /// evidence that needs a poll even while no TCP socket gives one a reason.
    package var dnsTimedOut: (() -> Void)?
    private var reportedTimeouts = 0

    private func startResolver(_ options: HostResolver.Options?) {
        self.options = options
        guard let options else {
            resolver = nil
            resolverError = "host checks are unavailable"
            return
        }
        do {
            let path = options.resolvConfPath ?? HostResolver.systemResolvConfPath
            if let files, files.resolvConfPath == path {
                resolver = try HostResolver(options: options, files: files)
            } else {
                resolver = try HostResolver(options: options)
            }
            resolverError = nil
            resolver?.socketWillClose = { [unowned self] fd in self.sources.socketWillClose(fd) }
        } catch {
            resolver = nil
            resolverError = "the resolver could not start: \(error)"
        }
    }

    /// Every host check answers dnsFailure with `reason` from now on (the loop's thread could not
    /// enter the watched namespace, so no DNS socket it opened would be there).
    package func disable(because reason: String) {
        resolver = nil
        resolverError = reason
    }

    /// New resolver settings (a reload): applied once no check waits for DNS, with a fresh cache.
    /// A new lookup rate applies at once, with full buckets.
    package func reconfigure(_ new: HostResolver.Options, rate newRate: LookupRate.Settings?) {
        if newRate != rate?.settings { rate = newRate.map(LookupRate.init) }
        guard new != options else { return }
        pendingOptions = new
        sync()
    }

    /// Mirrors the resolver's sockets and deadline into the loop; swaps in pending settings.
    private func sync() {
        if let pending = pendingOptions, running.isEmpty {
            pendingOptions = nil
            sources.reset()
            cache = HostCache(negativeLifetime: pending.negativeCacheTime)
            nameserverVerdict = nil
            startResolver(pending)
        }
        if let resolver { sources.sync(resolver) }
        let timeouts = consecutiveDNSTimeouts
        if timeouts != reportedTimeouts {
            reportedTimeouts = timeouts
            dnsTimedOut?()
        }
    }

    /// A network change (links, addresses, routes or rules moved): cached DNS answers stay valid
    /// (DNS did not change, and their routes are evaluated afresh at every check), but whether
    /// the nameservers can be reached must be asked again.
    package func networkChanged() {
        nameserverVerdict = nil
    }

    /// The host resumed from sleep: what DNS said before may be stale (another network, a portal
    /// that now lets through), so every cached answer goes, and the nameservers are judged anew.
    package func forgetAnswers() {
        cache.removeAll()
        nameserverVerdict = nil
    }

    /// The nameservers of resolv.conf and whether any of them can be reached now, kept until the
    /// network or the file changes: a burst of a thousand checks then costs one read of the file
    /// and one route lookup per server, not one each (perf: 0.1 ms per check, which made the
    /// last checks of a burst start, and so answer, 100 ms and more after they were asked).
    private var nameserverVerdict: (file: FileIdentity?, servers: [IPAddress], verdicts: [CheckResult])?

    private func nameserverVerdicts(_ resolver: HostResolver, name: String) -> (servers: [IPAddress], verdicts: [CheckResult]) {
        let file = FileIdentity(path: resolver.resolvConfPath)
        if let known = nameserverVerdict, known.file == file, file != nil { return (known.servers, known.verdicts) }
        let servers = resolver.nameservers()
        // The queries are reachd's own traffic, whoever asked.
        let verdicts = servers.map { evaluate([$0], name, nil) }
        nameserverVerdict = (file, servers, verdicts)
        return (servers, verdicts)
    }

    package func start(_ request: HostCheckRequest) {
        let now = ContinuousClock.now
        if let local = Self.localhostAddresses(request.name) {
            return request.completion(.success(route(local, request)))
        }
        if Self.isReservedInvalid(request.name) {
            return request.completion(.success(answer(.notFound, for: request)))
        }
        if let cached = cache.lookup(request.name, now: now) {
            return request.completion(.success(answer(cached, for: request)))
        }
        guard let resolver else {
            return request.completion(
                .success(CheckResult(target: request.name, reason: .dnsFailure, message: resolverError)))
        }
        // No route to any nameserver: no query could leave, so say so now instead of waiting.
        let (servers, verdicts) = nameserverVerdicts(resolver, name: request.name)
        if !servers.isEmpty {
            if !verdicts.contains(where: \.isReachable), let first = verdicts.first {
                // /etc/hosts still answers without the network (c-ares would read it first too).
                let local = resolver.hostsFileAddresses(request.name)
                if !local.isEmpty { return request.completion(.success(route(local, request))) }
                var result = CheckResult(target: request.name, flags: first.flags, interface: first.interface, reason: first.reason ?? .noRoute)
                result.message = "no DNS server is reachable (\(servers.map(\.description).joined(separator: ", ")))"
                return request.completion(.success(result))
            }
        }
        if let refusal = rate?.admit(request.owner, now: now) {
            return request.completion(.failure(CheckCancelled(refusal: refusal)))
        }
        let name = request.name
        let id = request.id
        let lookup = resolver.resolve(name, owner: request.owner, deadline: request.deadline) { [weak self] outcome in
            guard let self, let entry = self.running.removeValue(forKey: id) else { return }
            self.cache.store(name, outcome, now: .now)
            entry.request.completion(.success(self.answer(outcome, for: entry.request)))
        }
        running[id] = (request, lookup)
        sync()
    }

    package func cancel(_ id: UInt64) {
        guard let entry = running.removeValue(forKey: id) else { return }
        resolver?.cancel(entry.lookup)
        entry.request.completion(.failure(CheckCancelled()))
        sync()
    }

    /// Ends every check: the front end is stopping.
    package func cancelAll() {
        for id in Array(running.keys) { cancel(id) }
    }

    /// `addresses` routed as `request` asks, once each.
    private func route(_ addresses: [IPAddress], _ request: HostCheckRequest) -> CheckResult {
        switch request.routing {
        case .asThisProcess: evaluate(addresses, request.name, nil)
        case let .asUser(uid): evaluate(addresses, request.name, uid)
        case .none: CheckResult(target: request.name, addresses: addresses)
        }
    }

    private func answer(_ outcome: HostResolver.Outcome, for request: HostCheckRequest) -> CheckResult {
        let name = request.name
        switch outcome {
        case let .resolved(addresses, _):
            return route(addresses, request)
        case .notFound:
            return CheckResult(target: name, reason: .dnsNotFound, message: "no such name (NXDOMAIN or no A/AAAA records)")
        case .timedOut:
            return CheckResult(target: name, reason: .dnsTimeout, message: "no DNS answer before the deadline")
        case let .failed(message):
            return CheckResult(target: name, reason: .dnsFailure, message: message)
        }
    }

    /// RFC 6761 6.4: `invalid` and names under it never exist; answered NXDOMAIN without asking
    /// anyone, the same answer with DNS or without.
    package static func isReservedInvalid(_ name: String) -> Bool {
        let lowered = name.lowercased()
        let bare = lowered.hasSuffix(".") ? String(lowered.dropLast()) : lowered
        return bare == "invalid" || bare.hasSuffix(".invalid")
    }

    /// RFC 6761 6.3: `localhost` and names under it are the loopback, without asking anyone.
    package static func localhostAddresses(_ name: String) -> [IPAddress]? {
        let lowered = name.lowercased()
        let bare = lowered.hasSuffix(".") ? String(lowered.dropLast()) : lowered
        guard bare == "localhost" || bare.hasSuffix(".localhost") else { return nil }
        return [.v4(0x7F00_0001), .v6(0, 1)]
    }
}

extension CheckResult {
    /// Combines the checks of a host's addresses: reachable when any is (the first reachable one
    /// names the path); otherwise the most telling failure (a path that needs a connection beats
    /// no route at all). All addresses are listed.
    package static func combining(_ results: [CheckResult], target: String, addresses: [IPAddress]) -> CheckResult {
        let chosen = results.first(where: \.isReachable)
            ?? results.first(where: { $0.flags.contains(.connectionRequired) })
            ?? results.first
            ?? CheckResult(target: target, reason: .noRoute)
        var combined = chosen
        combined.target = target
        combined.addresses = addresses
        return combined
    }
}

/// The ids of a core's host checks: one sequence for every caller, whichever thread asks (the
/// core's own callers on its loop, an in-process monitor's on any thread), so no two checks in
/// the core's one table share an id.
package final class HostCheckIDs: Sendable {
    private let last = Atomic<UInt64>(0)

    package init() {}

    package func next() -> UInt64 { last.add(1, ordering: .relaxed).newValue }
}
