#if canImport(Glibc)
import Glibc
#endif

/// Why reachd cannot answer, in a user's words (reachctl's fallback notice, its `--daemon` error).
public struct ReachdUnavailable: Error, CustomStringConvertible {
    public var reason: String
    public var description: String { reason }
}

/// The one "ask reachd, else in-process" choice of reachctl and SystemConfiguration: reachd when
/// a status call on the bus is answered within a short probe, else the library in this process.
public enum ReachdOrInProcess {
    /// reachd's client on `bus`, once it answered `GetStatus` within `probeTimeout`; its later
    /// calls may take `callTimeout`. Throws the reason when no reachd answers: no bus, nobody owns
    /// the name, no reply in time, or an answer this library cannot read.
    public static func connect(
        _ bus: BusAddress, probeTimeout: Duration, callTimeout: Duration
    ) throws(ReachdUnavailable) -> ReachabilityClient {
        try probe(bus, probeTimeout: probeTimeout, callTimeout: callTimeout, keepingSnapshot: true).client
    }

    /// `connect`, keeping the probe's answer: what a process that asks once needs (`reachctl
    /// is`: one GetStatus is the probe and the answer). `keepingSnapshot`: the interfaces too,
    /// for the client's first `snapshot()` (`ReachabilityClient.probed`).
    package static func probe(
        _ bus: BusAddress, probeTimeout: Duration, callTimeout: Duration, keepingSnapshot: Bool = false
    ) throws(ReachdUnavailable) -> (client: ReachabilityClient, status: (host: HostStatus, generation: UInt64)) {
        let client: ReachabilityClient
        do {
            client = try ReachabilityClient(bus: bus, timeout: probeTimeout)
        } catch {
            throw ReachdUnavailable(reason: "cannot connect to the \(bus): \(systemText(error))")
        }
        let status: (host: HostStatus, generation: UInt64)
        do {
            status = try keepingSnapshot ? client.probeStatus() : client.status()
        } catch {
            throw ReachdUnavailable(reason: reason(for: error, bus: bus, timeout: probeTimeout))
        }
        client.timeout = callTimeout
        return (client, status)
    }

    /// `daemon` with reachd's client (and its bus) when reachd answers on `bus` (nil: never asked), else
    /// `inProcess` with the reason it did not (nil when not asked, or when `daemon` threw).
    public static func choose<Source, Failure: Error>(
        bus: BusAddress?, probeTimeout: Duration, callTimeout: Duration,
        daemon: (sending ReachabilityClient, BusAddress) throws -> Source,
        inProcess: (ReachdUnavailable?) throws(Failure) -> Source
    ) throws(Failure) -> Source {
        guard let bus else { return try inProcess(nil) }
        let client: ReachabilityClient
        do {
            client = try connect(bus, probeTimeout: probeTimeout, callTimeout: callTimeout)
        } catch {
            return try inProcess(error)
        }
        do {
            return try daemon(client, bus)
        } catch {
            return try inProcess(ReachdUnavailable(reason: "\(error)"))
        }
    }

    /// The probe's failure in a user's words.
    package static func reason(for error: BusError, bus: BusAddress, timeout: Duration) -> String {
        switch error.name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
            return "\(ReachdContract.busName) is not on the \(bus)"
        case "org.freedesktop.DBus.Error.Timeout", "org.freedesktop.DBus.Error.NoReply", "System.Error.\(ETIMEDOUT)":
            return "no answer on the \(bus) within \(DurationText.format(timeout))"
        case "org.freedesktop.DBus.Error.AccessDenied":
            return "access denied on the \(bus): \(error.message)"
        default:
            return systemText(error)
        }
    }

    /// `No such file or directory` for an errno-based error, the full description otherwise.
    private static func systemText(_ error: BusError) -> String {
        let prefix = "System.Error."
        if error.name.hasPrefix(prefix), let code = Int32(error.name.dropFirst(prefix.count)) {
            return String(cString: strerror(code))
        }
        return error.description
    }
}
