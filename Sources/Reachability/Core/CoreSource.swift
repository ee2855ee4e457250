/// One of the core's inputs beside the kernel's own sockets (resolv.conf, the DHCP leases, the
/// radios, the gateways asked again, the stall watch): a new input is a new type in the core's list
/// (`ReachabilityCore.sources`), not an edit of the core's init. Every member is called on the
/// core's loop.
package protocol CoreSource: AnyObject {
    /// What it reads once as the core starts, before any loop runs (part of the first picture,
    /// and of a snapshot taken without a loop); nil: nothing.
    func firstInput(kernel: any KernelEdge) -> NetworkInput?
    /// Starts following on the loop: each input it has goes in through `context.submit`. A source
    /// that can do without following says why through `context.warn`; one that throws stops the
    /// core from starting.
    func start(_ context: CoreSourceContext) throws(SystemError)
    /// After each of the core's turns, the state as the turn left it. It runs under the state's
    /// lock: arm a timer, nothing more.
    func turnTaken(_ state: borrowing NetworkState)
    /// The kernel's monitor socket woke (something on the host moved): a source that could not be
    /// followed may look again.
    func kernelWoke()
    /// The count of the core's own lookups that timed out in a row moved (`CoreSourceContext.dnsTimeouts`).
    func dnsTimeoutsMoved()
    /// A reload: the new configuration, before its rules are taken.
    func reconfigured(_ configuration: CoreConfiguration)
    /// Stops following (the core is going): nothing more is submitted.
    func cancel()
}

extension CoreSource {
    package func firstInput(kernel: any KernelEdge) -> NetworkInput? { nil }
    package func turnTaken(_ state: borrowing NetworkState) {}
    package func kernelWoke() {}
    package func dnsTimeoutsMoved() {}
    package func reconfigured(_ configuration: CoreConfiguration) {}
}

/// What a source is started with: the loop, the way in, and the core's parts it may ask.
package struct CoreSourceContext {
    package let loop: any EventLoopProtocol
    package let kernel: any KernelEdge
    /// Takes one input into the core (nil: none, only the source's own state moved); on the loop.
    package let submit: (NetworkInput?) -> Void
    /// A line worth a warning in the journal.
    package let warn: (String) -> Void
    /// The state, for a source's first look and its counters (metrics).
    package let shared: SharedState
    /// The core's own lookups that sent queries and got no answer before their deadline, in a
    /// row (stall evidence); any answer resets it.
    package let dnsTimeouts: () -> Int
}

/// /dev/rfkill, while it is followed: its records are one input each time it is readable. When it
/// ends (it should not), the radios are read from sysfs on link events from then on.
package final class RadioWatch: CoreSource {
    private var watch: (any LoopSource)?

    package func start(_ context: CoreSourceContext) throws(SystemError) {
        guard let descriptor = context.kernel.radioDescriptor else { return }
        let kernel = context.kernel
        watch = try context.loop.addWatch(fd: descriptor, events: .readable) { [unowned self] _ in
            context.submit(kernel.readRadios())
            guard kernel.radioDeviceEnded else { return }
            self.cancel()
            kernel.closeRadioDevice()
            context.warn("radios: \(kernel.radioSourceDescription)")
        }
    }

    package func cancel() {
        watch?.cancel()
        watch = nil
    }
}

/// The gateways whose resolution FAILED, asked again (`GatewayRechecks`) as each turn leaves them.
package final class FailedGatewayWatch: CoreSource {
    private var rechecks: GatewayRechecks?

    package func start(_ context: CoreSourceContext) throws(SystemError) {
        do {
            rechecks = try GatewayRechecks(loop: context.loop, warn: context.warn)
        } catch {
            return context.warn("a FAILED gateway is not asked again (no timer: \(error)); one FAILED makes it unreachable")
        }
        rechecks?.counted = { [shared = context.shared] in shared.record(gatewayResolutionsAsked: $0) }
        context.shared.withState { turnTaken($0) }
    }

    package func turnTaken(_ state: borrowing NetworkState) {
        rechecks?.follow(state.gatewaysToResolve, now: .now)
    }

    package func cancel() { rechecks = nil }
}

/// The DHCP client's leases (`DHCPLeases`): a server's metered hint per link, portal URIs. Read
/// once as the core starts, then followed while their directories are there.
package final class LeaseWatch: CoreSource {
    private let leases: DHCPLeases
    /// Cancelled: what the directories say is no input any more.
    private var following = true
    /// The first read's refusals, told once the journal is there (`start`): the leases remember
    /// them as told, so they would never be said again.
    private var firstRefusals: [String] = []

    package init(_ leases: DHCPLeases) { self.leases = leases }

    package func firstInput(kernel: any KernelEdge) -> NetworkInput? {
        let said = leases.changes()
        firstRefusals = said.refusals
        return said.events.isEmpty ? nil : .events(said.events)
    }

    package func start(_ context: CoreSourceContext) throws(SystemError) {
        for line in firstRefusals { context.warn(line) }
        firstRefusals = []
        do {
            try leases.start(on: context.loop) { [weak self] in
                guard let self, self.following else { return }
                let said = self.leases.changes()
                for line in said.refusals { context.warn(line) }
                if !said.events.isEmpty { context.submit(.events(said.events)) }
            }
        } catch {
            context.warn("DHCP leases are read once, not followed: \(error)")
        }
    }

    package func cancel() { following = false }
}

/// resolv.conf's nameservers (`NameserverWatch`) with the kernel's route to each: read as the
/// core starts, then followed with inotify, or, where inotify is refused, looked at each time
/// the kernel reports a change.
package final class NameserverSource: CoreSource {
    private let watch: NameserverWatch
    private let follows: Bool
    private var byIdentity = false
    private var context: CoreSourceContext?

    package init(_ watch: NameserverWatch, follows: Bool) {
        (self.watch, self.follows) = (watch, follows)
    }

    package func firstInput(kernel: any KernelEdge) -> NetworkInput? {
        kernel.setNameservers(watch.nameservers())
    }

    package func start(_ context: CoreSourceContext) throws(SystemError) {
        self.context = context
        guard follows else { return }
        do {
            try watch.start(on: context.loop) { [unowned self] in self.changed() }
        } catch {
            _ = watch.changedSinceLastLook()
            byIdentity = true
            context.warn("\(watch.path) is looked at on each network change instead of followed: \(error)")
        }
    }

    package func kernelWoke() {
        if byIdentity, watch.changedSinceLastLook() { changed() }
    }

    private func changed() {
        guard let context else { return }
        context.submit(context.kernel.setNameservers(watch.nameservers()))
    }

    package func cancel() {
        watch.stop()
        context = nil
    }
}
