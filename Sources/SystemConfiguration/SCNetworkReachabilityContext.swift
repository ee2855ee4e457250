/// Called on the dispatch queue given to `SCNetworkReachabilitySetDispatchQueue` when the
/// target's flags change, with the `info` the context's `retain` returned.
///
/// Apple's type is `@convention(c)`. Here it is a Swift function type, because `Unmanaged<CFString>`
/// (NSString on Linux) cannot cross a C function type; the closures that code passes (literals
/// that capture nothing) fit both. `@Sendable`, because it runs on the caller's queue, never
/// where it was written: such a closure is not isolated to the actor it was written in, so one
/// written on the main actor does not trap when a queue calls it.
public typealias SCNetworkReachabilityCallBack =
    @Sendable (SCNetworkReachability, SCNetworkReachabilityFlags, UnsafeMutableRawPointer?) -> Void

/// Apple's context: user data for the callback and how to retain, release and describe it.
///
/// `SCNetworkReachabilitySetCallback` calls `retain` on `info` once and hands the result to
/// every callback; `release` runs once that registration is replaced or cleared, or the
/// reference goes away, and never while a callback of that registration is still running.
/// `copyDescription` is asked when the reference is described (`String(describing:)`).
public struct SCNetworkReachabilityContext {
    /// Always 0.
    public var version: CFIndex
    public var info: UnsafeMutableRawPointer?
    public var retain: (@Sendable (UnsafeRawPointer) -> UnsafeRawPointer)?
    public var release: (@Sendable (UnsafeRawPointer) -> Void)?
    public var copyDescription: (@Sendable (UnsafeRawPointer) -> Unmanaged<CFString>)?

    /// Version 0 without info or callbacks.
    public init() {
        version = 0
    }

    public init(
        version: CFIndex, info: UnsafeMutableRawPointer?,
        retain: (@Sendable (UnsafeRawPointer) -> UnsafeRawPointer)?,
        release: (@Sendable (UnsafeRawPointer) -> Void)?,
        copyDescription: (@Sendable (UnsafeRawPointer) -> Unmanaged<CFString>)?
    ) {
        self.version = version
        self.info = info
        self.retain = retain
        self.release = release
        self.copyDescription = copyDescription
    }
}

/// One registration's `info`, retained through the context's `retain` when made and released
/// through its `release` when the last holder lets go: the reference, and every callback
/// queued or running for it. So `release` never runs while a callback may still use `info`.
final class RetainedInfo: @unchecked Sendable {
    // Immutable after init; `info` is the caller's, who made it safe to use from the callback queue.
    let info: UnsafeMutableRawPointer?
    private let release: (@Sendable (UnsafeRawPointer) -> Void)?
    private let copyDescription: (@Sendable (UnsafeRawPointer) -> Unmanaged<CFString>)?

    init(_ context: SCNetworkReachabilityContext) {
        if let info = context.info, let retain = context.retain {
            self.info = UnsafeMutableRawPointer(mutating: retain(UnsafeRawPointer(info)))
        } else {
            info = context.info
        }
        release = context.release
        copyDescription = context.copyDescription
    }

    deinit {
        if let info, let release { release(UnsafeRawPointer(info)) }
    }

    /// What the context's `copyDescription` says about `info`; nil without one.
    var text: String? {
        guard let info, let copyDescription else { return nil }
        return copyDescription(UnsafeRawPointer(info)).takeRetainedValue().description
    }
}
