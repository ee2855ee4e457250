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
    var kernel = true
    /// After the sizes, enable IPv6 on the largest size's pairs and measure again.
    var ipv6Round = true

    static let usage = """
        usage: reachbench [--json] [--quick] [--flaps N] [--warmup N] [--sync-reps N]
                          [--pairs A,B,...] [--engine-links A,B,...] [--engine-iterations N]
                          [--no-ipv6-round] [--no-sysfs] [--engine-only]

        Measures reachd's Reachability library against the real kernel, in a network namespace of
        its own (reachbench-<pid>, removed at exit). Needs root, except with --engine-only.

          --json                 results as one JSON object on stdout (progress goes to stderr)
          --quick                smoke run: 20 flaps, 2 sync repetitions, pairs 10,200,
                                 2000 engine iterations
          --flaps N              carrier flaps per size, two samples each (default 200)
          --warmup N             flaps discarded before sampling (default 20)
          --sync-reps N          initial syncs timed per size (default 5)
          --pairs A,B            veth pairs besides the uplink (default 10,2000)
          --engine-links A,B     links in the synthetic NetworkState (default 10,2000,20000; each >= 4)
          --engine-iterations N  apply() calls per engine measurement (default 20000)
          --no-ipv6-round        skip the last round (the largest size again, with IPv6
                                 link-local addresses on every extra pair end)
          --no-sysfs             give the monitor an empty sysfs root instead of mounting the
                                 namespace's sysfs
          --engine-only          only the in-process Engine measurements (no root needed)
        """

    static func parse(_ arguments: some Collection<String>) throws(BenchError) -> Options {
        var options = Options()
        if arguments.contains("--quick") {
            options.quick = true
            options.flaps = 20
            options.warmup = 5
            options.syncRepetitions = 2
            options.pairSizes = [10, 200]
            options.engineIterations = 2000
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
            case "--engine-only": options.kernel = false
            default: throw BenchError("unknown argument '\(argument)'")
            }
        }
        options.pairSizes.sort()
        return options
    }
}
