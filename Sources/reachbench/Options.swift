/// Command line of reachbench.
struct Options: Sendable {
    var json = false
    var help = false
    var quick = false
    /// Carrier flaps per size; each flap is two samples (down, then up).
    var flaps = 200
    /// Flaps run first and discarded.
    var warmup = 20
    var syncRepetitions = 5
    /// veth pairs besides the uplink pair, one measurement round per size.
    var pairSizes = [10, 2000]
    var engineSizes = [10, 2000, 20000]
    /// `apply` calls per engine measurement (half carrier off, half on).
    var engineIterations = 20000
    var sysfs = true
    /// The namespace rounds: initial sync, memory and change latency at each `pairSizes` size
    /// (and address checks at each size when `checks` is on too).
    var kernel = true
    /// After the sizes, enable IPv6 on the largest size's pairs and measure again.
    var ipv6Round = true
    /// The policy round: this many `ip rule`s and routes in other tables, then the largest size
    /// measured again (per-event cost with a big FIB; the host path asks the kernel each batch).
    /// The host load group: this many concurrent CheckHost calls per batch, with this deadline.
    var hostLoad = false
    /// GLib's GNetworkMonitor as a fourth observer of the bus flaps (waits 1 s per transition it misses).
    var glib = false
    var hostLoadCounts = [500, 1000, 3000]
    var hostLoadDeadlineMilliseconds = 2000
    /// Busy loops running during the host load (issue 9: deadlines on a saturated machine).
    var cpuHogs = 0
    var policyRules = 1000
    var policyRoutes = 10000
    /// The Engine in-process.
    var engine = true
    /// Address checks, host checks against a DNS black hole and dnsmasq, getent for comparison.
    var checks = true
    /// reachd on a private bus: Changed latency, call round trips, idle memory and wake-ups.
    var bus = true
    /// Timed address checks per target, and cached host checks.
    var checkSamples = 10_000
    var checkWarmup = 1_000
    var blackHoleRepetitions = 3
    var concurrentChecks = 500
    var deadlineMilliseconds = 500
    /// All checks of a black-hole batch share one deadline instead of each having its own.
    var sharedDeadline = false
    var getentRuns = 1
    /// Timed D-Bus calls per method.
    var busCalls = 5_000
    /// The stall poll (issue 22): sock_diag dump + decode + evaluation at each size.
    var stall = true
    var stallSizes = [100, 1000, 10000]
    var stallPolls = 200
    var reachdPath: String?
    /// A reachctl whose `monitor` line is timed beside `ip monitor` in the bus group (issue 43).
    var reachctlPaths: [String] = []

    /// Whether any group needs root (namespaces, child processes in them).
    var needsRoot: Bool { kernel || checks || bus || hostLoad || stall }

    static let usage = """
        usage: reachbench [--json] [--quick] [--only GROUP,...] [--checks] [--no-checks] [--bus] [--no-bus]
                          [--flaps N] [--warmup N] [--sync-reps N]
                          [--pairs A,B,...] [--engine-links A,B,...] [--engine-iterations N]
                          [--no-ipv6-round] [--policy RULES,ROUTES] [--host-load A,B] [--glib] [--no-sysfs] [--engine-only]
                          [--check-samples N] [--blackhole-reps N] [--concurrent N] [--deadline MS] [--shared-deadline]
                          [--getent-runs N] [--bus-calls N] [--reachd PATH]

        Measures reachd's Reachability library and the reachd daemon against the real kernel, in
        network namespaces of its own (reachbench-<pid>[-c|-s], removed at exit, also on signals).
        Needs root, except with --engine-only.

        Groups (all on by default; --quick runs only rounds and engine unless told otherwise):
          rounds   initial sync, memory and change latency at each --pairs size (1-3a)
          engine   the pure Engine in-process (3b)
          checks   address checks (also at each --pairs size when rounds run), host checks against
                   a DNS black hole and a dnsmasq, getent ahosts against the black hole (4-7)
          bus      reachd on a private dbus-daemon: Changed signal latency next to ip monitor and
                   the netlink floor, call round trips, idle memory and wake-ups (8)
          stall    one passive stall poll (sock_diag dump + decode + StallEvaluator) at each
                   --stall-sockets size of established TCP connections (11)

          --json                 results as one JSON object on stdout (progress goes to stderr)
          --quick                smoke run: 20 flaps, 2 sync repetitions, pairs 10,200,
                                 2000 engine iterations; checks and bus off (with --checks:
                                 1,000 samples, 1 black-hole repetition, no getent; with --bus:
                                 500 calls)
          --only GROUP,...       run only these groups (rounds, engine, checks, bus, hostload, stall)
          --stall-sockets A,B    TCP connections per stall size (default 100,1000,10000)
          --stall-polls N        timed polls per stall size (default 200, after 3 warm-up)
          --checks, --no-checks  turn the checks group on or off
          --bus, --no-bus        turn the bus group on or off
          --flaps N              carrier flaps per size, two samples each (default 200)
          --warmup N             flaps discarded before sampling (default 20)
          --sync-reps N          initial syncs timed per size (default 5)
          --pairs A,B            veth pairs besides the uplink (default 10,2000)
          --engine-links A,B     links in the synthetic NetworkState (default 10,2000,20000; each >= 4)
          --engine-iterations N  apply() calls per engine measurement (default 20000)
          --no-ipv6-round        skip the last round (the largest size again, with IPv6
                                 link-local addresses on every extra pair end)
          --glib                 bus flaps: also time GLib's GNetworkMonitor (python3-gi), which
                                 misses carrier changes: each miss costs a 1 s wait
          --host-load A,B,...    also run A, then B... concurrent D-Bus CheckHost calls against the
                                 DNS black hole (e.g. 500,1000,3000): lateness past the deadline,
                                 CheckAddress round trips meanwhile, reachd's CPU time
          --host-load-deadline MS  their deadline (default 2000)
          --cpu-hog N            host load: N shell busy loops hold the CPUs meanwhile (default 0;
                                 use the number of cores to saturate the machine)
          --policy RULES,ROUTES  before the IPv6 round, add this many ip rules (none matching
                                 the flapped path, all traversed by every lookup) and routes in
                                 100 other tables, and measure the largest size again
                                 (default 1000,10000; 0,0 skips; --quick skips)
          --no-sysfs             give the monitor an empty sysfs root instead of mounting the
                                 namespace's sysfs
          --engine-only          only the in-process Engine measurements (no root needed);
                                 the same as --only engine
          --check-samples N      timed address checks per target, and cached host checks
                                 (default 10000, after 1000 warm-up; a tenth as many no-link checks)
          --blackhole-reps N     repetitions of the black-hole measurement (default 3)
          --concurrent N         host checks at once against the black hole (default 500)
          --deadline MS          their deadline (default 500), from each call
          --shared-deadline      one deadline for the whole batch instead (the waiting checks
                                 then all expire together, without being started)
          --getent-runs N        getent ahosts runs against the black hole, ~10 s each (default 1)
          --bus-calls N          timed D-Bus calls per method (default 5000); the bus flaps
                                 use --flaps and --warmup
          --reachd PATH          the reachd binary (default: next to reachbench)
          --reachctl PATH        bus group: also time a kernel event to this reachctl's
                                 `monitor` line, beside ip monitor on the same flaps; give it
                                 again for another reachctl on the same flaps (before/after)
        """

    static func parse(_ arguments: some Collection<String>) throws(BenchError) -> Options {
        var options = Options()
        if arguments.contains("--quick") {
            options.quick = true
            options.flaps = 20
            options.warmup = 5
            options.syncRepetitions = 2
            options.pairSizes = [10, 200]
            options.policyRules = 0
            options.policyRoutes = 0
            options.engineIterations = 2000
            options.checks = false
            options.bus = false
            options.checkSamples = 1000
            options.checkWarmup = 100
            options.blackHoleRepetitions = 1
            options.getentRuns = 0
            options.busCalls = 500
            options.stallPolls = 20
        }
        var rest = Array(arguments)[...]
        func value(_ name: String) throws(BenchError) -> String {
            guard let value = rest.popFirst() else { throw BenchError("\(name) needs a value") }
            return value
        }
        func count(_ name: String, minimum: Int) throws(BenchError) -> Int {
            let text = try value(name)
            guard let number = Int(text), number >= minimum else {
                throw BenchError("\(name): expected a whole number >= \(minimum), got '\(text)'")
            }
            return number
        }
        func counts(_ name: String, minimum: Int) throws(BenchError) -> [Int] {
            let text = try value(name)
            let numbers = text.split(separator: ",").compactMap { Int($0) }
            guard !numbers.isEmpty, numbers.count == text.split(separator: ",").count, numbers.allSatisfy({ $0 >= minimum })
            else { throw BenchError("\(name): expected numbers >= \(minimum) separated by commas, got '\(text)'") }
            return numbers
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--json": options.json = true
            case "--quick": break
            case "-h", "--help": options.help = true
            case "--flaps": options.flaps = try count(argument, minimum: 1)
            case "--warmup": options.warmup = try count(argument, minimum: 0)
            case "--sync-reps": options.syncRepetitions = try count(argument, minimum: 1)
            case "--pairs": options.pairSizes = try counts(argument, minimum: 0)
            case "--engine-links": options.engineSizes = try counts(argument, minimum: 4)
            case "--engine-iterations": options.engineIterations = try count(argument, minimum: 2)
            case "--no-sysfs": options.sysfs = false
            case "--no-ipv6-round": options.ipv6Round = false
            case "--glib": options.glib = true
            case "--host-load":
                options.hostLoad = true
                options.hostLoadCounts = try counts(argument, minimum: 1)
            case "--host-load-deadline": options.hostLoadDeadlineMilliseconds = try count(argument, minimum: 10)
            case "--cpu-hog": options.cpuHogs = try count(argument, minimum: 0)
            case "--policy":
                let numbers = try counts(argument, minimum: 0)
                guard numbers.count == 2 else { throw BenchError("--policy takes RULES,ROUTES, e.g. 1000,10000; got \(numbers)") }
                (options.policyRules, options.policyRoutes) = (numbers[0], numbers[1])
            case "--engine-only":
                options.kernel = false
                options.checks = false
                options.bus = false
                options.stall = false
                options.engine = true
            case "--only":
                let text = try value(argument)
                let groups = text.split(separator: ",").map(String.init)
                let known = ["rounds", "engine", "checks", "bus", "hostload", "stall"]
                guard !groups.isEmpty, groups.allSatisfy(known.contains) else {
                    throw BenchError("--only: expected groups from \(known.joined(separator: ",")), got '\(text)'")
                }
                options.kernel = groups.contains("rounds")
                options.engine = groups.contains("engine")
                options.checks = groups.contains("checks")
                options.bus = groups.contains("bus")
                options.hostLoad = groups.contains("hostload")
                options.stall = groups.contains("stall")
            case "--checks": options.checks = true
            case "--no-checks": options.checks = false
            case "--bus": options.bus = true
            case "--no-bus": options.bus = false
            case "--check-samples": options.checkSamples = try count(argument, minimum: 1)
            case "--blackhole-reps": options.blackHoleRepetitions = try count(argument, minimum: 0)
            case "--concurrent": options.concurrentChecks = try count(argument, minimum: 1)
            case "--deadline": options.deadlineMilliseconds = try count(argument, minimum: 1)
            case "--shared-deadline": options.sharedDeadline = true
            case "--getent-runs": options.getentRuns = try count(argument, minimum: 0)
            case "--bus-calls": options.busCalls = try count(argument, minimum: 1)
            case "--reachd": options.reachdPath = try value(argument)
            case "--reachctl": options.reachctlPaths.append(try value(argument))
            case "--stall-sockets": options.stallSizes = try counts(argument, minimum: 1)
            case "--stall-polls": options.stallPolls = try count(argument, minimum: 1)
            default: throw BenchError("unknown argument '\(argument)'")
            }
        }
        options.pairSizes.sort()
        return options
    }
}
