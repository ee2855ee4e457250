/// The kernel as the core meets it: the sockets to watch, and each reading of them as one input.
/// `KernelSource` is the real one (rtnetlink, /dev/rfkill); a test gives the core a fake, so the
/// core's own rules (update order, resync, lifetimes, reloads, resumes) run without a kernel, a
/// namespace or root. Every member is called on the core's loop.
package protocol KernelEdge: AnyObject {
    /// The descriptor the loop watches for the kernel's events (the monitor socket).
    var monitorDescriptor: Int32 { get }
    /// The descriptor the loop watches while a dump runs.
    var requestDescriptor: Int32 { get }
    /// /dev/rfkill while it is followed; nil when the radios come from sysfs.
    var radioDescriptor: Int32? { get }
    /// Where the radios' state comes from, in words.
    var radioSourceDescription: String { get }
    /// The receive buffer the kernel granted the monitor socket, in bytes.
    var receiveBufferBytes: Int { get }
    /// A dump is under way: the monitor descriptor is left unwatched until it ends.
    var isDumping: Bool { get }
    var overrunCount: Int { get }
    var resyncCount: Int { get }
    /// When `resyncIfDue` must be called; nil when no resync is pending.
    var resyncDeadline: ContinuousClock.Instant? { get }

    /// The first complete picture, waited for (once, before the loop runs).
    func synchronize(knowing state: borrowing NetworkState) throws(SystemError) -> NetworkInput?
    /// What the monitor descriptor holds now, as one input; never blocks.
    func readAvailable(knowing state: borrowing NetworkState) -> NetworkInput?
    /// What a dump brought since the last call; its end is the input that replaces the kernel's facts.
    func continueDump(knowing state: borrowing NetworkState) -> NetworkInput?
    func resyncIfDue()
    /// A fresh dump, as after an overrun (a resume from sleep asks for one).
    func requestResync()
    /// The routes, addresses and prefixes whose lifetimes ended by `now`, as one input.
    func lifetimesDue(at now: ContinuousClock.Instant, knowing state: borrowing NetworkState) -> NetworkInput?
    /// The routes to these nameservers, followed from now on, as one input.
    func setNameservers(_ servers: [IPAddress]) -> NetworkInput?
    /// What /dev/rfkill holds now, as one input.
    func readRadios() -> NetworkInput?
    /// /dev/rfkill ended: the radios are read from sysfs from then on.
    var radioDeviceEnded: Bool { get }
    func closeRadioDevice()
    /// A router's announcement the Engine refused, said once per router.
    func note(_ refusal: RefusedAnnouncement)
    /// What went wrong since the last call, in words for the journal.
    func takeIncidentLines() -> [String]
}

extension KernelSource: KernelEdge {
    package var radioDescriptor: Int32? { radios.descriptor }
    package var radioSourceDescription: String { radios.source.description }
    package var radioDeviceEnded: Bool { radios.deviceEnded }
    package func closeRadioDevice() { radios.closeDevice() }
    package func takeIncidentLines() -> [String] { takeIncidents().map(\.description) }
}
