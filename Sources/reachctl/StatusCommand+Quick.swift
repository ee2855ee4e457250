import Reachability
#if canImport(Glibc)
import Glibc
#endif

// MARK: the quick path

extension StatusCommand {
    /// The exit status of `reachctl` and `reachctl status` (with `--json`, `--no-color`), found
    /// without ArgumentParser and without the async runtime, as `is` does (`IsCommand.quickStatus`):
    /// the bare command is what people type most, and the full path's client thread and the
    /// runtime's pool (five threads) cost more than reachd's two answers. reachd's answer is one
    /// `GetStatus` (the probe) and the snapshot (`GetStatus`, `ListInterfaces`), printed as the
    /// full path prints it. nil for anything else, or when reachd does not answer: the full path
    /// then says so and answers in-process, so every command line has one meaning.
    static func quickStatus(_ arguments: [String]) -> Int32? {
        var rest = arguments[...]
        if rest.first == "status" { rest = rest.dropFirst() }
        var json = false, noColour = false
        for word in rest {
            switch word {
            case "--json": json = true
            case "--no-color": noColour = true
            default: return nil
            }
        }
        let bus = CommonOptions.bus(option: nil)
        guard let (client, _) = try? ReachdOrInProcess.probe(bus, probeTimeout: CommonOptions.probeTimeout, callTimeout: DaemonSource.callTimeout),
            let snapshot = try? client.snapshot()
        else { return nil }
        if json {
            Terminal.writeLine(snapshot.json.serialized())
        } else {
            var output = OutputOptions()
            output.noColour = noColour
            Terminal.writeLine(renderStatus(snapshot, style: output.textStyle(verbose: false)))
        }
        return snapshot.host.state == .online ? ExitStatus.success.rawValue : ExitStatus.notReachable.rawValue
    }
}
