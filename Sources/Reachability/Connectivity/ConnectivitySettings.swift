/// `[Connectivity]` in reachd.conf: the probe is off until `URL=` names a server.
public struct ConnectivitySettings: Sendable, Hashable {
    /// The probe's target; nil: the probe is off (no timer, no traffic, `Connectivity` unknown).
    public var url: ProbeURL?
    public var expectation = ProbeExpectation()
    /// How long a steady good answer is trusted before the next probe. NetworkManager's default.
    public var interval: Duration = .seconds(300)
    /// The whole probe's deadline: DNS, connect, request and answer together.
    public var timeout: Duration = .seconds(10)

    public init() {}

    public var isEnabled: Bool { url != nil }

    public static let statusRange: ClosedRange<Int> = 100...599
    public static let intervalRange: ClosedRange<Duration> = .seconds(10) ... .seconds(86_400)
    public static let timeoutRange: ClosedRange<Duration> = .milliseconds(500) ... .seconds(120)
    /// The first re-probe after a bad answer; each one after doubles, up to `interval`.
    public static let firstRetry: Duration = .seconds(1)
}
