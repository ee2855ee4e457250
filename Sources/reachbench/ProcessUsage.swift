import Reachability
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - another process's resource use

/// What /proc says about a process (reachd): memory and how often its threads ran.
struct ProcessUsage: Sendable {
    var residentKiB = 0
    var anonymousKiB = 0
    var fileKiB = 0
    /// Proportional set size (shared pages divided among their users), from smaps_rollup.
    var proportionalKiB = 0
    var threads = 0
    /// Sum over the threads of /proc/PID/task/TID/schedstat's third field: times it got a CPU.
    var timeslices: UInt64 = 0
    /// Sum over the threads of voluntary + involuntary context switches.
    var contextSwitches: UInt64 = 0
    /// Resident KiB per mapped file (by file name) and for anonymous memory, largest first.
    var mappings: [(name: String, kib: Int)] = []

    static func read(_ pid: pid_t) -> ProcessUsage {
        var usage = ProcessUsage()
        func field(_ text: String, _ name: String) -> UInt64 {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
            return UInt64(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map {
                $0.filter(\.isNumber)
            } ?? "") ?? 0
        }
        let status = readSmallFile("/proc/\(pid)/status") ?? ""
        usage.residentKiB = Int(field(status, "VmRSS"))
        usage.anonymousKiB = Int(field(status, "RssAnon"))
        usage.fileKiB = Int(field(status, "RssFile"))
        usage.proportionalKiB = Int(field(readSmallFile("/proc/\(pid)/smaps_rollup") ?? "", "Pss"))
        for task in directoryEntries("/proc/\(pid)/task") where task.first?.isNumber == true {
            usage.threads += 1
            let schedstat = (readSmallFile("/proc/\(pid)/task/\(task)/schedstat") ?? "").split(separator: " ")
            if schedstat.count >= 3 { usage.timeslices += UInt64(schedstat[2].filter(\.isNumber)) ?? 0 }
            let taskStatus = readSmallFile("/proc/\(pid)/task/\(task)/status") ?? ""
            usage.contextSwitches += field(taskStatus, "voluntary_ctxt_switches")
                + field(taskStatus, "nonvoluntary_ctxt_switches")
        }
        usage.mappings = residentByMapping(pid)
        return usage
    }

    /// /proc/PID/smaps: Rss summed per file name ("[anonymous]" for heap, stacks and other anonymous maps).
    static func residentByMapping(_ pid: pid_t) -> [(name: String, kib: Int)] {
        var totals: [String: Int] = [:]
        var current = "[anonymous]"
        for line in (readSmallFile("/proc/\(pid)/smaps", limit: 1 << 22) ?? "").split(separator: "\n") {
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = words.first else { continue }
            if first.contains("-"), first.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
                // A mapping's header: range, perms, offset, dev, inode, [path].
                let path = words.count >= 6 ? String(words[5]) : ""
                current = path.hasPrefix("/") ? String(path.split(separator: "/").last ?? "") : "[anonymous]"
            } else if first == "Rss:", words.count >= 2, let kib = Int(words[1]) {
                totals[current, default: 0] += kib
            }
        }
        return totals.map { (name: $0.key, kib: $0.value) }.sorted { $0.kib > $1.kib }
    }
}

/// The names in a directory (without . and ..).
func directoryEntries(_ path: String) -> [String] {
    (try? DirectoryNames.list(path).get()) ?? []
}

/// Per-thread CPU and run-queue time of this process (/proc/self/task/*/schedstat), to tell
/// "the code was slow" from "the code was waiting for a CPU".
struct ThreadTimes: Sendable {
    /// tid -> (ns on a CPU, ns runnable but waiting for a CPU)
    var threads: [String: (running: UInt64, waiting: UInt64)] = [:]

    static func current() -> ThreadTimes {
        var times = ThreadTimes()
        for task in directoryEntries("/proc/self/task") where task.first?.isNumber == true {
            let fields = (readSmallFile("/proc/self/task/\(task)/schedstat") ?? "").split(separator: " ")
            guard fields.count >= 2, let running = UInt64(fields[0]), let waiting = UInt64(fields[1]) else { continue }
            times.threads[task] = (running, waiting)
        }
        return times
    }

    /// Run-queue waiting since `earlier`: summed over the threads, and the largest of one thread.
    func waiting(since earlier: ThreadTimes) -> (total: UInt64, largest: UInt64) {
        var total: UInt64 = 0
        var largest: UInt64 = 0
        for (tid, now) in threads {
            let delta = now.waiting &- (earlier.threads[tid]?.waiting ?? 0)
            total &+= delta
            largest = max(largest, delta)
        }
        return (total, largest)
    }
}
