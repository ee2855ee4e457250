/// A binary min-heap of instants, each with a key: the earliest is read in O(1), and adding or
/// taking one costs O(log n). Entries are never removed from the middle: an owner whose
/// deadline moved or ended leaves its entry behind and skips it when it comes up (`isCurrent`),
/// which keeps cancellation O(1) and costs at most one stale entry per change; `compact` drops
/// them all when they pile up. The resolver's deadlines and timers and reachd's watch retries.
package struct DeadlineHeap<Key> {
    private var entries: [(instant: ContinuousClock.Instant, key: Key)] = []

    public init() {}

    public var isEmpty: Bool { entries.isEmpty }
    /// Entries held, stale ones included.
    public var count: Int { entries.count }

    /// The earliest entry, without taking it.
    public var first: (instant: ContinuousClock.Instant, key: Key)? { entries.first }

    public mutating func insert(_ instant: ContinuousClock.Instant, _ key: Key) {
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
    public mutating func removeFirst() -> (instant: ContinuousClock.Instant, key: Key)? {
        guard !entries.isEmpty else { return nil }
        entries.swapAt(0, entries.count - 1)
        let first = entries.removeLast()
        siftDown(0)
        return first
    }

    /// Drops stale entries from the top until the earliest is current (or none is left).
    public mutating func prune(isCurrent: (ContinuousClock.Instant, Key) -> Bool) {
        while let top = entries.first, !isCurrent(top.instant, top.key) { removeFirst() }
    }

    /// Drops every stale entry and rebuilds the heap: O(n).
    public mutating func compact(isCurrent: (ContinuousClock.Instant, Key) -> Bool) {
        entries.removeAll { !isCurrent($0.instant, $0.key) }
        for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    public mutating func removeAll() { entries.removeAll(keepingCapacity: true) }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < entries.count else { break }
            let right = left + 1
            let smaller = right < entries.count && entries[right].instant < entries[left].instant ? right : left
            guard entries[smaller].instant < entries[parent].instant else { break }
            entries.swapAt(parent, smaller)
            parent = smaller
        }
    }
}
