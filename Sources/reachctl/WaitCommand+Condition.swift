import ArgumentParser
import Reachability
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What `wait` knows so far, what it waits for (its selectors) and whether that holds.
extension WaitCommand {
    /// What is known so far: the host picture (kept whole by applying each change) and the
    /// target's latest answer.
    struct State: Sendable {
        var snapshot: ReachabilitySnapshot?
        var answer: TargetAnswer?
    }

    /// systemd-networkd-wait-online's selectors (`--interface`, `--any`, `-4`, `-6`, `--dns`).
    struct Selectors: Sendable {
        var interfaces: [InterfaceRequirement] = []
        var any = false
        var ipv4 = false
        var ipv6 = false
        var dns = false

        /// Whether any is given.
        var isActive: Bool { !interfaces.isEmpty || ipv4 || ipv6 || dns }

        /// Whether they hold in `snapshot`; the host's part (online) is the caller's.
        func hold(in snapshot: ReachabilitySnapshot) -> Bool {
            if dns, !snapshot.host.pathFacts.supportsDNS { return false }
            guard !interfaces.isEmpty else {
                // No link named: the families are the internet path's.
                return (!ipv4 || snapshot.host.pathFacts.supportsIPv4) && (!ipv6 || snapshot.host.pathFacts.supportsIPv6)
            }
            let met = interfaces.map { $0.isMet(in: snapshot, ipv4: ipv4, ipv6: ipv6) }
            return any ? met.contains(true) : !met.contains(false)
        }

        var families: String {
            [ipv4 ? "IPv4" : nil, ipv6 ? "IPv6" : nil].compactMap { $0 }.joined(separator: " and ")
        }

        /// `eth0 ready with IPv4`, `one of eth0 ready, wlan0 ready`, `an IPv6 path`, `a routable nameserver`.
        var goal: [String] {
            var parts: [String] = []
            let with = families.isEmpty ? "" : " with \(families)"
            if !interfaces.isEmpty {
                let links = interfaces.map(\.goal).joined(separator: ", ")
                parts.append((any && interfaces.count > 1 ? "one of \(links)" : links) + with)
            } else if !families.isEmpty {
                parts.append("an \(families) internet path")
            }
            if dns { parts.append("a routable nameserver") }
            return parts
        }

        /// What is missing in `snapshot`.
        func missing(in snapshot: ReachabilitySnapshot?) -> [String] {
            var parts: [String] = []
            let unmet = interfaces.filter { link in !(snapshot.map { link.isMet(in: $0, ipv4: ipv4, ipv6: ipv6) } ?? false) }
            if !unmet.isEmpty, !any || unmet.count == interfaces.count {
                parts += unmet.map { $0.seen(in: snapshot, ipv4: ipv4, ipv6: ipv6) }
            } else if interfaces.isEmpty, !families.isEmpty, let facts = snapshot?.host.pathFacts,
                (ipv4 && !facts.supportsIPv4) || (ipv6 && !facts.supportsIPv6) {
                parts.append("no \(families) internet path")
            }
            if dns, snapshot?.host.pathFacts.supportsDNS != true { parts.append("no nameserver routable") }
            return parts
        }
    }

    /// The condition, and the state seen so far (shared with the timeout side of the race).
    final class Condition: Sendable {
        let target: String?
        let kind: InterfaceKind?
        /// The probe's verdict must be full (`--internet`).
        let internet: Bool
        /// A stalled path satisfies the wait (`--allow-stalled`).
        let allowStalled: Bool
        /// networkd-wait-online's selectors.
        let selectors: Selectors
        private let seen = Mutex(State())

        init(target: String?, kind: InterfaceKind?, internet: Bool = false, allowStalled: Bool = false, selectors: Selectors = Selectors()) {
            self.target = target
            self.kind = kind
            self.internet = internet
            self.allowStalled = allowStalled
            self.selectors = selectors
        }

        var state: State { seen.withLock { $0 } }

        /// Records an update; returns the state when the condition now holds.
        func record(_ update: ReachabilityUpdate) -> State? {
            seen.withLock { state in
                switch update {
                case let .snapshot(snapshot): state.snapshot = snapshot
                case let .change(change): state.snapshot = state.snapshot?.applying(change)
                }
                return holds(state) ? state : nil
            }
        }

        func record(_ answer: TargetAnswer) -> State? {
            seen.withLock { state in
                state.answer = answer
                return holds(state) || answer.result.reason == .invalidTarget ? state : nil
            }
        }

        func holds(_ state: State) -> Bool {
            if let target {
                guard let answer = state.answer, answer.result.target == target, answer.result.isReachable,
                    allowStalled || !answer.result.flags.contains(.stalled)
                else { return false }
            }
            if let kind {
                guard let snapshot = state.snapshot, Self.usable(kind, in: snapshot) else { return false }
            }
            if internet {
                guard let snapshot = state.snapshot, snapshot.host.state == .online, snapshot.host.connectivity.verdict == .full
                else { return false }
            }
            if selectors.isActive {
                guard let snapshot = state.snapshot, selectors.hold(in: snapshot) else { return false }
            }
            // The host online, unless a target, a kind or links (which ignore all others) are asked.
            if target == nil, kind == nil, selectors.interfaces.isEmpty {
                guard let host = state.snapshot?.host else { return false }
                return host.state == .online && (allowStalled || !host.stalled)
            }
            return true
        }

        /// Whether an interface of `kind` is among the available (usable) ones.
        static func usable(_ kind: InterfaceKind, in snapshot: ReachabilitySnapshot) -> Bool {
            snapshot.host.availableInterfaces.contains { name in
                snapshot.interfaces.contains { $0.name == name && $0.kind == kind }
            }
        }

        /// What is waited for, for the timeout message: "the host to be online", "192.0.2.1 to be
        /// reachable and a usable wired link".
        var goal: String {
            var parts: [String] = []
            if let target { parts.append("\(target) to be reachable") }
            if let kind { parts.append("a usable \(kind.rawValue) link") }
            if internet { parts.append("the internet to answer (connectivity full)") }
            parts += selectors.goal
            if target == nil, kind == nil, selectors.interfaces.isEmpty, !parts.isEmpty { parts.insert("the host online", at: 0) }
            return parts.isEmpty ? "the host to be online" : parts.joined(separator: " and ")
        }

        /// What is still missing, for the timeout message.
        func missing(_ state: State) -> String {
            var parts: [String] = []
            let host = state.snapshot.map { renderSummary($0.host, interfaces: $0.interfaces) } ?? "state unknown"
            if let target {
                if let answer = state.answer?.result {
                    parts.append("\(target) is not reachable" + (answer.reason.map { " (\($0.rawValue))" } ?? ""))
                } else {
                    parts.append("no answer for \(target) yet")
                }
            }
            if let kind, !(state.snapshot.map { Self.usable(kind, in: $0) } ?? false) {
                parts.append("no usable \(kind.rawValue) link")
            }
            if internet, let connectivity = state.snapshot?.host.connectivity, connectivity.verdict != .full {
                // The summary names portal/none/limited already; unknown means the probe is off.
                if connectivity.verdict == .unknown { parts.append("connectivity unknown (is [Connectivity] URL= set in reachd.conf?)") }
            }
            if !allowStalled, state.snapshot?.host.stalled == true { parts.append("traffic is stalled (--allow-stalled accepts that)") }
            parts += selectors.missing(in: state.snapshot)
            if target == nil, kind == nil, parts.isEmpty { return host }
            return (parts + [host]).joined(separator: "; ")
        }
    }
}
