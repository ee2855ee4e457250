/// What owners hold of one `Quota` right now: the one ledger reachd's watches, its host checks in
/// flight and the resolver's running lookups count through, so that no two of them can keep the
/// reserve or an owner's share differently, and a take is undone by exactly one release.
/// Not thread-safe: each ledger belongs to the thread of what it counts.
package struct QuotaLedger<Owner: Hashable> {
    /// The bounds (changed by a reload; what is held keeps its place).
    package var quota: Quota
    /// Held in all, the system's included.
    package private(set) var held = 0
    /// Held by owners other than the system, together.
    package private(set) var heldByOthers = 0
    /// Held by each owner other than the system (none at 0).
    private var byOwner: [Owner: Int] = [:]
    private let isSystem: (Owner) -> Bool

    /// `isSystem` tells the owners that may take the reserve, and have no share of their own.
    package init(_ quota: Quota, isSystem: @escaping (Owner) -> Bool) {
        self.quota = quota
        self.isSystem = isSystem
    }

    /// What `owner` holds now.
    package func held(by owner: Owner) -> Int { byOwner[owner] ?? 0 }

    /// Which bound refuses one more to `owner`, or nil when it may take it.
    package func refusal(for owner: Owner) -> Quota.Refusal? {
        quota.refusal(system: isSystem(owner), held: held, ofOwner: held(by: owner), byOthers: heldByOthers)
    }

    /// `owner` takes one (whether it may was asked before: a reload may have lowered the bounds
    /// below what is held, and what is held is never taken back).
    package mutating func take(_ owner: Owner) {
        held += 1
        guard !isSystem(owner) else { return }
        heldByOthers += 1
        byOwner[owner, default: 0] += 1
    }

    /// `owner` gives one back: what it took, exactly once.
    package mutating func release(_ owner: Owner) {
        precondition(held > 0, "a quota released more often than taken")
        held -= 1
        guard !isSystem(owner) else { return }
        precondition(byOwner[owner, default: 0] > 0, "a quota released by an owner that holds none")
        heldByOthers -= 1
        byOwner[owner]? -= 1
        if byOwner[owner] == 0 { byOwner[owner] = nil }
    }

    /// Forgets everything held (at stop, when every holder is let go at once).
    package mutating func clear() {
        (held, heldByOthers, byOwner) = (0, 0, [:])
    }
}
