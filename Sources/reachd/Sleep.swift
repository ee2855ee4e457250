import Reachability

/// Sleep and resume, learned without asking anyone and without delaying the sleep: logind's
/// `PrepareForSleep(b)` on the system bus (true before, false after; reachd has nothing to finish
/// before the host sleeps, only to redo after, so it takes no inhibitor), and where logind is
/// absent, the time CLOCK_BOOTTIME gained on CLOCK_MONOTONIC (`SleepClock`), looked at only when
/// the loop wakes for something else: no timer, no wake-up of its own. logind's warning that the
/// host goes to sleep is handed on to `suspending`, a resume to `resumed`; what is dropped or
/// redone then is not this part's business.
final class Sleep {
    static let logindName = "org.freedesktop.login1"
    static let logindPath = "/org/freedesktop/login1"
    static let logindInterface = "org.freedesktop.login1.Manager"

    private let suspending: () -> Void
    private let resumed: (_ how: String) -> Void
    private var clock = SleepClock()
    /// logind said the host goes to sleep: its signal after the resume, not the clocks, says when
    /// the host is back (the clocks would tell the same resume twice). Should logind's first
    /// signal only be read after the resume, behind other wake-ups, the clocks may tell it first
    /// and logind again: a second resync and probe, harmless, never a missed resume.
    private var asleep = false
    private var match: BusSlot?
    private var clockCheck: EventSource?

    init(bus: BusConnection, loop: EventLoop, suspending: @escaping () -> Void, resumed: @escaping (_ how: String) -> Void) throws {
        self.suspending = suspending
        self.resumed = resumed
        // The bus lets only logind own its name, and delivers a match on a well-known sender
        // only from the name's owner: nobody else can make reachd think the host slept.
        match = try bus.matchSignal(
            sender: Self.logindName, path: Self.logindPath, interface: Self.logindInterface, member: "PrepareForSleep"
        ) { [unowned self] message in
            guard let start = try? message.readBool() else { return }
            self.prepareForSleep(start)
        }
        clockCheck = try loop.afterEachWake { [unowned self] in self.checkClocks() }
    }

    private func prepareForSleep(_ start: Bool) {
        if start {
            asleep = true
            Log.info("the host goes to sleep (logind)")
            suspending()
            return
        }
        asleep = false
        // The clocks saw the same sleep: not a second resume.
        _ = clock.slept()
        resumed("logind")
    }

    private func checkClocks() {
        guard let asleep = clock.slept(), !self.asleep else { return }
        resumed("CLOCK_BOOTTIME gained \(DurationText.format(asleep)) on CLOCK_MONOTONIC")
    }
}
