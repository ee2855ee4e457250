@testable import Reachability

/// A `KernelSource` and the state it feeds, driven by hand as the core's loop drives them: for
/// tests that look at the netlink side alone (overruns, resyncs, the nameservers' routes).
final class HandDrivenKernel {
    let source: KernelSource
    private(set) var state = NetworkState()

    init(options: KernelSource.Options) throws {
        source = try KernelSource(options: options)
    }

    func synchronize() throws {
        if let input = try source.synchronize(knowing: state) { _ = state.take(input) }
    }

    /// One read of the monitor socket, applied.
    func readAvailable() {
        if let input = source.readAvailable(knowing: state) { _ = state.take(input) }
    }

    /// Waits for a dump under way (if any) and applies it.
    func completeDump() throws {
        if let input = try source.completeDump(knowing: state) { _ = state.take(input) }
    }

    func setNameservers(_ servers: [IPAddress]) {
        if let input = source.setNameservers(servers) { _ = state.take(input) }
    }

    var resyncCount: Int { source.resyncCount }
    var overrunCount: Int { source.overrunCount }
    func takeIncidents() -> [KernelSource.Incident] { source.takeIncidents() }
    func nameserverEvents() -> [NetworkEvent] { source.nameserverEvents() }
}
