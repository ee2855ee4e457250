/// Carries a loop-thread value through a `@Sendable` closure that runs on that same thread
/// (a completion of the loop's own work): the compiler cannot see that it never crosses.
public struct UncheckedSendable<Value>: @unchecked Sendable {
    public let value: Value
    public init(_ value: Value) { self.value = value }
}
