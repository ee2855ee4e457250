#if canImport(Glibc)
import Glibc
#endif

// Apple's status codes, as its Swift overlay imports them (`var kSCStatusOK: Int { get }`), so
// `Int(SCError()) == kSCStatusInvalidArgument` compiles unchanged. Only the ones this module sets
// or a caller may test for reachability are here.

/// The call succeeded.
public var kSCStatusOK: Int { 0 }
/// The call failed for a reason no other code names (reachd and the in-process library both
/// unavailable).
public var kSCStatusFailed: Int { 1001 }
/// An argument was invalid: a socket address of another family, a name that cannot be a host.
public var kSCStatusInvalidArgument: Int { 1002 }
/// Permission denied.
public var kSCStatusAccessError: Int { 1003 }
/// The configuration server is not available.
public var kSCStatusNoStoreServer: Int { 2002 }
/// The reachability of the target cannot be determined (no answer in time).
public var kSCStatusReachabilityUnknown: Int { 4001 }

/// The status of the last SystemConfiguration call on this thread, as Apple's `SCError()`:
/// per thread, so a failure on one queue is never read as another's.
public func SCError() -> Int32 { SCErrorState.current }

/// A sentence for a status code. The text is static: the pointer stays valid forever.
public func SCErrorString(_ status: Int32) -> UnsafePointer<CChar> {
    SCErrorState.messages.text(for: status)
}

/// Where `SCError()` keeps its value: a pthread key, so each thread has its own.
enum SCErrorState {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed: no keys left in this process")
        return key
    }()

    static var current: Int32 {
        Int32(truncatingIfNeeded: Int(bitPattern: pthread_getspecific(key)))
    }

    /// Records `status` for this thread (the value is stored in the pointer itself: no memory).
    static func set(_ status: Int) {
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: status))
    }

    static let messages = Messages()

    /// The sentences, as C strings made once and never freed (Apple's are static too).
    final class Messages: @unchecked Sendable {
        // Immutable after init; the pointers are never freed, so sharing them is safe.
        private let table: [Int32: UnsafePointer<CChar>]
        private let unknown: UnsafePointer<CChar>

        init() {
            let texts: [Int: String] = [
                kSCStatusOK: "Success",
                kSCStatusFailed: "Failed: neither reachd nor the in-process library could answer",
                kSCStatusInvalidArgument: "Invalid argument",
                kSCStatusAccessError: "Permission denied",
                kSCStatusNoStoreServer: "reachd is not available",
                kSCStatusReachabilityUnknown: "Network reachability cannot be determined",
            ]
            var table: [Int32: UnsafePointer<CChar>] = [:]
            for (code, text) in texts { table[Int32(code)] = UnsafePointer(strdup(text)!) }
            self.table = table
            unknown = UnsafePointer(strdup("Unknown status code")!)
        }

        func text(for status: Int32) -> UnsafePointer<CChar> {
            if let text = table[status] { return text }
            // errno values: Apple's SCErrorString falls back to strerror as well.
            if status > 0, status < 1000 { return UnsafePointer(strerror(status)) }
            return unknown
        }
    }
}
