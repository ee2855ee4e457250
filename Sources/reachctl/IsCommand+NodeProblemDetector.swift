import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// `reachctl is CONDITION... --npd`: the answer as node-problem-detector's custom plugins give
/// theirs (its custom-plugin-monitor runs the command and reads both): exit 0 when every
/// condition holds, 1 when one does not (a problem), 2 when no answer could be had (unknown); and
/// one line on standard output, which becomes the node condition's message. NPD cuts the message
/// at `max_output_length` (80 bytes in its own configurations), so the line leads with the
/// condition and its verdict. packaging/reachd-npd.json is the shipped plugin configuration.
enum NodeProblemDetector {
    static let ok: Int32 = 0
    static let problem: Int32 = 1
    static let unknown: Int32 = 2

    /// The flag that selects it.
    static let flag = "--npd"

    /// Says the verdict of `conditions` in `snapshot` in one line; returns the exit status.
    static func report(_ conditions: [HostCondition], in snapshot: ReachabilitySnapshot) -> Int32 {
        let failed = conditions.compactMap { condition in condition.failure(in: snapshot).map { (condition, $0) } }
        guard !failed.isEmpty else {
            Terminal.writeLine(conditions.map(\.word).joined(separator: ", ") + ": yes")
            return ok
        }
        Terminal.writeLine(failed.map { "\($0.0.word): no, \($0.1)" }.joined(separator: "; "))
        return problem
    }

    /// No answer: one line saying so (standard error has said why), exit 2.
    static func cannotTell(_ why: String = "no answer from reachd nor in-process; see reachctl's standard error") -> Int32 {
        Terminal.writeLine("unknown: " + why)
        return unknown
    }

    /// Whether a command line asks for `is --npd`: its usage errors then exit 2, not 255.
    static func requested(_ arguments: [String]) -> Bool {
        arguments.contains(IsCommand.name) && arguments.contains(flag)
    }
}
