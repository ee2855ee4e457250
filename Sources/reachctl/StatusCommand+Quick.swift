import Reachability

extension StatusCommand {
    /// `reachctl` and `reachctl status` as most people type them (`--json` and `--bus-address`
    /// aside, nothing else): one GetStatus through reachd, or without it the state an in-process
    /// monitor starts with, and no parser. ArgumentParser's generic metadata and the async
    /// runtime were more than half of `status`'s CPU (5.3 ms against `is`'s 2.2 with the same one
    /// call). Anything else takes the full path (nil).
    static func quickStatus(_ arguments: [String]) -> Int32? {
        var words = arguments[...]
        if words.first == "status" { words = words.dropFirst() }
        var json = false
        var busAddress: String?
        while let word = words.popFirst() {
            switch word {
            case "--json": json = true
            case "--bus-address":
                // A value that looks like an option is the parser's to refuse.
                guard let value = words.popFirst(), !value.isEmpty, !value.hasPrefix("-") else { return nil }
                busAddress = value
            default: return nil
            }
        }
        let bus = CommonOptions.bus(option: busAddress)
        if case let .address(address) = bus, BusAddressSyntax.problem(in: address) != nil { return nil }
        let snapshot: ReachabilitySnapshot
        do {
            let client = try ReachdOrInProcess.connect(bus, probeTimeout: CommonOptions.probeTimeout, callTimeout: DaemonSource.callTimeout)
            guard let answer = try? client.snapshot() else { return nil }
            snapshot = answer
        } catch {
            guard let answer = CommonOptions.inProcessSnapshot(error, requireDaemon: false, configDirectories: []) else { return ExitStatus.error.rawValue }
            snapshot = answer
        }
        Terminal.writeLine(json ? snapshot.json.serialized() : renderStatus(snapshot, style: OutputOptions.textStyle(refusingColour: false, verbose: false)))
        return snapshot.host.state == .online ? 0 : ExitStatus.notReachable.rawValue
    }
}
