#if canImport(Glibc)
import Glibc
#endif

/// The resync dump, driven by the loop: requested on the non-blocking request socket, read as
/// the kernel's replies arrive (`continueDump`, when `requestDescriptor` is readable), bounded by
/// `Options.dumpTimeout` (`resyncIfDue`, at `resyncDeadline`). The loop never waits for the kernel.
extension KernelSource {
    /// Waits for the dump under way to end (only before a loop runs: the first sync, and tests
    /// that drive the mirror by hand); throws what ended it if it failed.
    /// `state`: what is known, as for `continueDump`; returns the dump's input.
    package func completeDump(knowing state: borrowing NetworkState) throws(SystemError) -> NetworkInput? {
        var input: NetworkInput?
        while let deadline = dump?.deadline {
            var ready = pollfd(fd: requests.fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&ready, 1, Int32(clamping: ContinuousClock.now.duration(to: deadline).millisecondsRoundedUp))
            resyncIfDue()
            input = continueDump(knowing: state) ?? input
        }
        if let failure = lastDumpFailure {
            lastDumpFailure = nil
            throw failure
        }
        return input
    }

    /// For the loop's timer at `resyncDeadline`: starts the pending resync once it is due, or
    /// gives up on a dump the kernel did not finish by its deadline (to be retried).
    package func resyncIfDue() {
        if let dump {
            if dump.deadline <= .now { failDump(SystemError("rtnetlink dump timed out", errno: ETIMEDOUT)) }
        } else if let deadline = resyncDeadline, deadline <= .now {
            beginDump()
        }
    }

    /// Asks for a resync as soon as the loop can start it, whatever the last one: after a resume
    /// from sleep the kernel's state moved while nothing was read, as after an overrun.
    package func requestResync() {
        needsResync = true
        lastResync = nil
    }

    /// For the loop's timer at `NetworkState.nextExpiry`: a route's or an address's lifetime
    /// ran out. The deadline held may be stale (a router advertisement renews a route's lifetime
    /// without a word on netlink), so the kernel is asked again with a dump, whose end brings
    /// the time in; a NAT64 prefix's lifetime is ours to end, at once.
    package func lifetimesDue(at now: ContinuousClock.Instant, knowing state: borrowing NetworkState) -> NetworkInput? {
        guard let lapse = state.nextLapse, lapse <= now else { return .events([.clock(now)]) }
        if !isDumping { beginDump(confirmingLifetimes: true) }
        return nil
    }

    /// A dump in flight: links, then addresses, then routes, then neighbours (the gateways'
    /// ARP/ND state: after the routes that make them gateways), each asked when the one before
    /// ended, and asked again when the kernel says a change interrupted it.
    package struct Dump {
        static let types = [RT.getLink, RT.getAddress, RT.getRoute, RT.getNeighbour]
        let deadline: ContinuousClock.Instant
        /// Asked by `lifetimesDue`, not after a loss: no incident, no resync counted.
        var confirmingLifetimes = false
        /// What the monitor socket said just before (`mayReviveLapsedRoute`), applied first.
        var held: [NetworkEvent] = []
        var stage = 0
        var attempts = 0
        var sequence: UInt32 = 0
        var messages: [RoutingMessage] = []
        var interrupted = false
        var result = NetworkDump()
        /// Links of this dump by index, so sysfs is read once per link.
        var known: [Int32: String] = [:]
    }

    /// Starts replacing the state with a fresh dump; what the monitor queues from now on is
    /// applied after it.
    /// `timeout`: how long it may take, `Options.dumpTimeout` when nil.
    package func beginDump(confirmingLifetimes: Bool = false, holding held: [NetworkEvent] = [], timeout: Duration? = nil) {
        lastResync = .now
        needsResync = false
        lastDumpFailure = nil
        dump = Dump(deadline: .now + (timeout ?? options.dumpTimeout), confirmingLifetimes: confirmingLifetimes, held: held)
        requestStage()
    }

    package func requestStage() {
        sequence &+= 1
        if sequence == 0 { sequence = 1 }  // kernel notifications use sequence 0
        dump!.sequence = sequence
        dump!.messages = []
        dump!.interrupted = false
        do {
            try requests.send(NetlinkRequest.dump(type: Dump.types[dump!.stage], sequence: sequence))
        } catch {
            failDump(error)
        }
    }

    package func failDump(_ error: SystemError) {
        incidents.append(.resyncFailed(error))
        lastDumpFailure = error
        needsResync = true
        dump = nil
    }

    /// Reads what the kernel sent of the dump (never waiting) and moves it on; once the whole
    /// dump is in, the input that replaces the kernel's part of `state` with it.
    package func continueDump(knowing state: borrowing NetworkState) -> NetworkInput? {
        for _ in 0..<Self.datagramsPerTurn {
            guard let current = dump else {
                // Nothing asked: whatever came (late parts of a dump given up on) is dropped, so
                // the socket does not stay readable.
                while case .datagram = (try? requests.receive(into: &buffer)) ?? .wouldBlock {}
                return nil
            }
            let count: Int
            do {
                switch try requests.receive(into: &buffer) {
                case .wouldBlock: return nil
                case .foreign: continue
                case let .datagram(received, truncated):
                    if truncated { dump!.interrupted = true }
                    count = received
                }
            } catch {
                failDump(error)
                return nil
            }
            let batch = buffer.withUnsafeBytes {
                NetlinkDecoder.decode(UnsafeRawBufferPointer(rebasing: $0[..<min(count, $0.count)]), received: .now)
            }
            incidents += batch.errors.map(Incident.malformed)
            for decoded in batch.messages where decoded.header.sequence == current.sequence {
                if decoded.header.isDumpInterrupted { dump!.interrupted = true }
                switch decoded.message {
                case .done:
                    return stageDone(knowing: state)
                case let .error(code) where code < 0:
                    failDump(SystemError("rtnetlink dump \(Dump.types[current.stage])", errno: -code))
                    return nil
                default:
                    dump!.messages.append(decoded.message)
                }
            }
        }
        return nil
    }

    package func stageDone(knowing state: borrowing NetworkState) -> NetworkInput? {
        let type = Dump.types[dump!.stage]
        if dump!.interrupted {
            dump!.attempts += 1
            guard dump!.attempts < 16 else {
                failDump(SystemError("rtnetlink dump \(type) kept being interrupted", errno: EAGAIN))
                return nil
            }
            requestStage()
            return nil
        }
        for message in dump!.messages {
            switch message {
            case let .link(link):
                let device = deviceFacts(for: link, alsoKnown: dump!.known, knowing: state)
                dump!.result.links.append((link, device))
                dump!.known[link.index] = link.name
                for case let .radio(index, block) in radios.events(for: link, kind: kind(of: link, device: device, knowing: state)) {
                    dump!.result.radios.append((index, block))
                }
            case let .address(address): dump!.result.addresses.append(address)
            case let .route(route): dump!.result.routes.append(route)
            case var .neighbour(neighbour):
                neighbour.received = .now
                dump!.result.neighbours.append(neighbour)
            default: break
            }
        }
        dump!.stage += 1
        dump!.attempts = 0
        guard dump!.stage == Dump.types.count else {
            requestStage()
            return nil
        }
        var result = dump!.result
        let (confirming, held) = (dump!.confirmingLifetimes, dump!.held)
        dump = nil
        for case let .internetPath(family, route) in internetPathEvents() { result.internetPaths.append((family, route)) }
        if !confirming {
            resyncCount += 1
            incidents.append(.resynced)
        }
        // The time last: a route the kernel keeps past its expiry (until its garbage collection)
        // is in the dump, and lapses in the same batch, with no change in between.
        let now = ContinuousClock.now
        keptLapsed = Set(result.routes.lazy.filter { $0.expiry.map { $0 <= now } ?? false }.map(\.key))
        return .dump(result, held: held, then: nameserverEvents() + [.clock(now)])
    }
}
