/// `[Connectivity]` in reachd.conf: the probe is off until `URL=` names a server.
package struct ConnectivitySettings: Sendable, Hashable {
    /// The probe's target; nil: the probe is off (no timer, no traffic, `Connectivity` unknown).
    package var url: ProbeURL?
    package var expectation = ProbeExpectation()
    /// How long a steady good answer is trusted before the next probe. NetworkManager's default.
    package var interval: Duration = .seconds(300)
    /// The whole probe's deadline: DNS, connect, request and answer together.
    package var timeout: Duration = .seconds(10)

    package init() {}

    package var isEnabled: Bool { url != nil }

    package static let statusRange: ClosedRange<Int> = 100...599
    package static let intervalRange: ClosedRange<Duration> = .seconds(10) ... .seconds(86_400)
    package static let timeoutRange: ClosedRange<Duration> = .milliseconds(500) ... .seconds(120)
    /// The first re-probe after a bad answer; each one after doubles, up to `interval`.
    package static let firstRetry: Duration = .seconds(1)
}
