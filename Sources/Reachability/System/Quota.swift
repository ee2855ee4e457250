/// A bounded resource many owners hold at once: reachd's D-Bus watches, its host checks in flight,
/// the resolver's running lookups. `total` in all; owners other than the system (root, reachd's
/// own work) together at most `total - reserve`, so that however many of them hold their share the
/// system still finds room; each of them at most `perOwner`, so that one alone never takes what
/// the others may use. One rule and one formula for the three, so they cannot drift apart.
package struct Quota: Equatable, Sendable {
    public let total: Int
    /// What only the system may take: a quarter of `total`, at least one when there are two.
    public let reserve: Int
    /// What one owner other than the system may hold: as configured, else half of what the
    /// others may use together, at least one.
    public let perOwner: Int

    public init(total: Int, perOwner: Int? = nil) {
        self.total = max(0, total)
        reserve = total >= 2 ? max(1, total / 4) : 0
        self.perOwner = perOwner ?? max(1, (total - reserve) / 2)
    }

    /// Which bound refuses one more.
    public enum Refusal: Equatable, Sendable {
        /// `total` is held.
        case total
        /// The owner holds `perOwner`.
        case owner
        /// Owners other than the system hold all but the reserve.
        case reserve
    }

    /// Whether one more may be taken by an owner that holds `ofOwner` now, while `held` are
    /// held in all and `byOthers` by owners other than the system; nil when it may.
    public func refusal(system: Bool, held: Int, ofOwner: Int, byOthers: Int) -> Refusal? {
        guard held < total else { return .total }
        guard !system else { return nil }
        guard ofOwner < perOwner else { return .owner }
        guard byOthers < total - reserve else { return .reserve }
        return nil
    }
}
