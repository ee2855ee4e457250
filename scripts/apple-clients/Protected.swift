// This project's stand-in for Alamofire's Protected.swift (a value behind a lock), which pulls
// in the rest of Alamofire; NetworkReachabilityManager.swift only uses its read/write shape.
import Foundation

final class Protected<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func read<U>(_ closure: (Value) throws -> U) rethrows -> U {
        lock.lock()
        defer { lock.unlock() }
        return try closure(value)
    }

    @discardableResult
    func write<U>(_ closure: (inout Value) throws -> U) rethrows -> U {
        lock.lock()
        defer { lock.unlock() }
        return try closure(&value)
    }
}
