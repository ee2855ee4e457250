/// Carries a value that is not `Sendable` through a `@Sendable` closure where only one thread
/// ever uses it: a loop-thread value through a completion of the loop's own work, or a value
/// handed whole to the new thread that becomes its only user. The compiler cannot see either.
package struct UncheckedSendable<Value>: @unchecked Sendable {
    public let value: Value
    public init(_ value: Value) { self.value = value }
}
