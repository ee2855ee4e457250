/// The resolver's vocabulary (its options, outcomes and socket changes) and its one request type.
extension HostResolver {
    package struct Options: Sendable, Equatable {
        /// Lookups running at once (one channel, one or two sockets each); more wait in line.
        package var maxConcurrent = 64
        /// The resolv.conf to read; nil for the system's. Read again for every lookup.
        package var resolvConfPath: String? = nil
        /// How long callers that cache answers keep negative ones (`HostChecks` does).
        package var negativeCacheTime: Duration = HostCache.negativeTTL

        package init(maxConcurrent: Int = 64, resolvConfPath: String? = nil, negativeCacheTime: Duration = HostCache.negativeTTL) {
            self.maxConcurrent = maxConcurrent
            self.resolvConfPath = resolvConfPath
            self.negativeCacheTime = negativeCacheTime
        }
    }

    package enum Outcome: Equatable, Sendable {
        /// A and AAAA answers together, IPv4 first; `ttl` is the smallest TTL in seconds (0 for
        /// /etc/hosts answers).
        case resolved([IPAddress], ttl: UInt32)
        /// NXDOMAIN, or the name exists without addresses.
        case notFound
        /// The deadline came first (or every server and retry timed out before it).
        case timedOut
        /// Anything else (refused, server failure, bad answer...): c-ares' message and status name,
        /// or which server refused and how.
        case failed(String)
    }

    /// A socket whose watch must change: `readable` and `writable` both false means it closed.
    /// `renewed`: the number was closed at least once since the last report, so whatever the
    /// loop registered under it is gone (epoll forgets a closed file) and must be made anew,
    /// even if a socket with that number is open again now.
    package struct SocketChange: Equatable, Sendable {
        package var fd: Int32
        package var readable: Bool
        package var writable: Bool
        package var renewed: Bool
        package var isClosed: Bool { !readable && !writable }
    }

    package typealias RequestID = UInt64

    /// One lookup from `resolve` until its completion has run or it was cancelled.
    package final class Request {
        enum Phase {
            /// In line for a slot.
            case waiting
            /// Its turn came too close to its deadline: it is answered `.timedOut` then.
            case parked
            case running(AresLookup)
            case finished(Outcome)
            /// Completed or cancelled: nothing more happens to it.
            case over
        }

        let id: RequestID
        let name: String
        let owner: LookupOwner
        let deadline: ContinuousClock.Instant
        let completion: (Outcome) -> Void
        var phase = Phase.waiting
        /// When its channel's retransmission timer is due, while running.
        var timerDue: ContinuousClock.Instant?

        init(id: RequestID, name: String, owner: LookupOwner, deadline: ContinuousClock.Instant, completion: @escaping (Outcome) -> Void) {
            self.id = id
            self.name = name
            self.owner = owner
            self.deadline = deadline
            self.completion = completion
        }

        var lookup: AresLookup? {
            if case .running(let lookup) = phase { return lookup }
            return nil
        }

        var isWaiting: Bool {
            if case .waiting = phase { return true }
            return false
        }

        /// Waiting, parked or running: its deadline still matters.
        var isPending: Bool {
            switch phase {
            case .waiting, .parked, .running: true
            case .finished, .over: false
            }
        }
    }
}

/// Whose lookup it is: what the resolver's fair shares count (see `HostResolver.Shares`).
package enum LookupOwner: Hashable, Sendable, CustomStringConvertible {
    /// The system: reachd's own work (the connectivity probe's name) and callers running as root.
    /// It may take every slot, the reserve included.
    case system
    /// A Unix user other than root.
    case user(UInt32)
    /// Lookups shared by the callers of many users (reachd's watched targets): one share, as a user.
    case shared

    /// A bus caller's owner by its Unix user: root is the system.
    package init(uid: UInt32) { self = uid == 0 ? .system : .user(uid) }

    package var description: String {
        switch self {
        case .system: "the system"
        case let .user(uid): "Unix user \(uid)"
        case .shared: "the watched targets"
        }
    }
}

/// The oldest-first line of one owner's lookups waiting for a slot. A lookup that ends while it
/// waits (cancelled, or its deadline passed) stays in the array and is dropped when it reaches
/// the head; `count` holds only those still waiting.
package struct WaitingLine {
    private var requests: [HostResolver.Request] = []
    private var head = 0
    package private(set) var count = 0

    package mutating func append(_ request: HostResolver.Request) {
        requests.append(request)
        count += 1
    }

    /// A waiting request of this line ended where it stands.
    package mutating func left() { count -= 1 }

    /// The oldest request still waiting.
    package mutating func first() -> HostResolver.Request? {
        while head < requests.count, !requests[head].isWaiting { head += 1 }
        // Drop the consumed prefix once it is all there is, or large enough to be worth a copy.
        if head == requests.count {
            requests.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 {
            requests.removeFirst(head)
            head = 0
        }
        return head < requests.count ? requests[head] : nil
    }

    /// Takes the oldest waiting request out of the line (`first` must have returned it).
    package mutating func removeFirst() {
        head += 1
        count -= 1
    }
}

/// The resolver could not be set up at all (c-ares failed to initialise).
package struct ResolverError: Error, Hashable, Sendable, CustomStringConvertible {
    package var message: String
    package var description: String { message }
}
