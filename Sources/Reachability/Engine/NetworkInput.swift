/// One input to the state, whatever it comes from: facts (a batch of the kernel's events, a
/// probe's or the stall watch's verdict, the radios, the clock, the nameservers' routes), a fresh
/// dump that replaces the kernel's part, or new interface rules. The state's owner
/// (`ReachabilityCore`) takes every input as one of these, through one call, so there is one way
/// in and one place where changes are made and told.
package enum NetworkInput: Sendable {
    case events([NetworkEvent])
    /// A fresh dump; `held`: facts read before it was asked for, applied first; `then`: facts
    /// taken after it (see `NetworkState.replace`).
    case dump(NetworkDump, held: [NetworkEvent], then: [NetworkEvent])
    /// A reload's interface rules and priorities.
    case rules(Classifier)
}

extension NetworkState {
    /// Takes one input; returns what a user can see changed, or nil when nothing visible did.
    package mutating func take(_ input: NetworkInput) -> ReachabilityChange? {
        switch input {
        case let .events(events): apply(events)
        case let .dump(dump, held, then): replace(with: dump, after: held, then: then)
        case let .rules(classifier): reclassify(with: classifier)
        }
    }
}
