import Foundation

// The few CoreFoundation names SCNetworkReachability's signatures carry. swift-corelibs-foundation
// keeps CoreFoundation to itself (`import Foundation` on Linux gives neither CFString nor
// CFAllocator nor CFIndex: checked with Swift 6.3), so they are declared here, each as small as
// the code that ports over needs. A program that also imports the toolchain's CoreFoundation
// module directly would see two of each; none of the clients this module is made for does.

/// What `copyDescription` returns: `Unmanaged.passRetained(text as CFString)` compiles and works,
/// because a String bridges to NSString on Linux as it does to CFString on Apple platforms.
public typealias CFString = NSString

/// The allocator argument of the Create functions. Code passes `nil` or `kCFAllocatorDefault`
/// (which is nil on Apple platforms too); nothing else exists, so nothing can be misused.
public final class CFAllocator: Sendable {
    private init() {}
}

/// The default allocator: nil, as on Apple platforms.
public let kCFAllocatorDefault: CFAllocator? = nil

/// CoreFoundation's signed size type: the `version` of a context.
public typealias CFIndex = Int
