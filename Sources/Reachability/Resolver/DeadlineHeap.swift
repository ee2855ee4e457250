/// A binary min-heap of instants, each with a key: the earliest is read in O(1), and adding or
/// taking one costs O(log n). Entries are never removed from the middle: an owner whose
/// deadline moved or ended leaves its entry behind and skips it when it comes up (`isCurrent`),
/// which keeps cancellation O(1) and costs at most one stale entry per change.
struct DeadlineHeap<Key> {
    private var entries: [(instant: ContinuousClock.Instant, key: Key)] = []

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// The earliest entry, without taking it.
    var first: (instant: ContinuousClock.Instant, key: Key)? { entries.first }

    mutating func insert(_ instant: ContinuousClock.Instant, _ key: Key) {
        entries.append((instant, key))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].instant < entries[parent].instant else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Takes the earliest entry.
    @discardableResult
    mutating func removeFirst() -> (instant: ContinuousClock.Instant, key: Key)? {
        guard !entries.isEmpty else { return nil }
        entries.swapAt(0, entries.count - 1)
        let first = entries.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            guard left < entries.count else { break }
            let right = left + 1
            let smaller = right < entries.count && entries[right].instant < entries[left].instant ? right : left
            guard entries[smaller].instant < entries[parent].instant else { break }
            entries.swapAt(parent, smaller)
            parent = smaller
        }
        return first
    }

    /// Drops stale entries from the top until the earliest is current (or none is left).
    mutating func prune(isCurrent: (ContinuousClock.Instant, Key) -> Bool) {
        while let top = entries.first, !isCurrent(top.instant, top.key) { removeFirst() }
    }

    mutating func removeAll() { entries.removeAll(keepingCapacity: true) }
}
