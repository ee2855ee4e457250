/// Host targets waiting for their next DNS attempt, earliest first: a binary min-heap, so a
/// timer tick costs O(log n) per due target instead of a walk over every watch.
///
/// Entries are never removed from the middle: a target whose retry is cancelled (asked again
/// after a network change, or dropped) gets a new token, and its old entry is skipped when it
/// reaches the top. The heap is rebuilt when such dead entries outnumber the live ones.
struct RetryHeap {
    private struct Entry {
        let at: ContinuousClock.Instant
        let token: UInt64
        let target: WatchedTarget

        var isLive: Bool { target.retryToken == token }
    }

    private var entries: [Entry] = []
    private var nextToken: UInt64 = 0
    /// Targets with a retry pending (entries that are not dead).
    private(set) var count = 0

    /// Schedules `target`'s next attempt at `at`, replacing any it had.
    mutating func insert(_ target: WatchedTarget, at: ContinuousClock.Instant) {
        cancel(target)
        nextToken += 1
        target.retryToken = nextToken
        target.retryAt = at
        count += 1
        entries.append(Entry(at: at, token: nextToken, target: target))
        siftUp(entries.count - 1)
        if entries.count > 2 * count + 64 { compact() }
    }

    /// Forgets `target`'s pending retry, if any.
    mutating func cancel(_ target: WatchedTarget) {
        guard target.retryAt != nil else { return }
        target.retryAt = nil
        nextToken += 1
        target.retryToken = nextToken
        count -= 1
    }

    /// The earliest pending retry, if any.
    mutating func earliest() -> ContinuousClock.Instant? {
        dropDeadTop()
        return entries.first?.at
    }

    /// Removes and returns the targets whose retry is due at `now`, earliest first.
    mutating func popDue(now: ContinuousClock.Instant) -> [WatchedTarget] {
        var due: [WatchedTarget] = []
        while let top = earliest(), top <= now {
            let entry = removeTop()
            cancel(entry.target)
            due.append(entry.target)
        }
        return due
    }

    private mutating func dropDeadTop() {
        while let first = entries.first, !first.isLive { _ = removeTop() }
    }

    private mutating func removeTop() -> Entry {
        let top = entries[0]
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            siftDown(0)
        }
        return top
    }

    private mutating func compact() {
        entries = entries.filter(\.isLive)
        for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].at < entries[parent].at else { return }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < entries.count else { return }
            var smallest = left
            if left + 1 < entries.count, entries[left + 1].at < entries[left].at { smallest = left + 1 }
            guard entries[smallest].at < entries[parent].at else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
