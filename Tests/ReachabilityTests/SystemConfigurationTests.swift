import Foundation
import Synchronization
import Testing
@testable import Reachability
@testable import SystemConfiguration

/// issue 10: code written for SCNetworkReachability compiles on Linux against the
/// SystemConfiguration module and gets truthful answers. The API's shapes, without the kernel.
struct SystemConfigurationAPITests {
    @Test func flagsHaveApplesNamesAndBits() {
        let expected: [(SCNetworkReachabilityFlags, UInt32)] = [
            (.transientConnection, 1 << 0), (.reachable, 1 << 1), (.connectionRequired, 1 << 2),
            (.connectionOnTraffic, 1 << 3), (.interventionRequired, 1 << 4), (.connectionOnDemand, 1 << 5),
            (.isLocalAddress, 1 << 16), (.isDirect, 1 << 17), (.isWWAN, 1 << 18), (.connectionAutomatic, 1 << 3),
        ]
        for (flag, bit) in expected { #expect(flag.rawValue == bit) }
        // The library's flags agree bit for bit; its Linux extensions are left out.
        let library: ReachabilityFlags = [.reachable, .isDirect, .isWiFi, .isWired, .isVPN, .isExpensive, .transientConnection]
        #expect(SCNetworkReachabilityFlags(library) == [.reachable, .isDirect, .transientConnection])
        #expect(SCNetworkReachabilityFlags(ReachabilityFlags(rawValue: 0xFFFF_FFFF)).rawValue == 0x0007_003F)
    }

    @Test func socketAddressLengthBytesReadAsTheStructureSize() {
        var zero = sockaddr()
        zero.sa_len = 200  // accepted, and meaningless on Linux
        #expect(zero.sa_len == UInt8(MemoryLayout<sockaddr>.size))
        #expect(socketAddress("192.0.2.1").sin_len == 16)
        var v6 = sockaddr_in6()
        v6.sin6_len = 0
        #expect(v6.sin6_len == 28)
    }

    @Test func addressesAreReadFromSocketAddresses() throws {
        var zero = sockaddr()
        zero.sa_family = sa_family_t(AF_INET)
        #expect(addressText(&zero) == "0.0.0.0")
        var v4 = socketAddress("192.0.2.7")
        #expect(withUnsafePointer(to: &v4) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { addressText($0) } } == "192.0.2.7")
        var v6 = sockaddr_in6()
        v6.sin6_family = sa_family_t(AF_INET6)
        inet_pton(AF_INET6, "fe80::1", &v6.sin6_addr)
        v6.sin6_scope_id = 3
        #expect(withUnsafePointer(to: &v6) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { addressText($0) } } == "fe80::1%3")
        var unix = sockaddr()
        unix.sa_family = sa_family_t(AF_UNIX)
        #expect(addressText(&unix) == nil)
    }

    @Test func createRefusesWhatReachdRefusesAndSaysSoInSCError() throws {
        #expect(SCNetworkReachabilityCreateWithName(nil, "example.org") != nil)
        #expect(SCError() == Int32(kSCStatusOK))
        #expect(SCNetworkReachabilityCreateWithName(kCFAllocatorDefault, "192.0.2.1")?.target == .address("192.0.2.1"))
        for refused in ["127.1", "host.123", "", "bad name"] {
            #expect(SCNetworkReachabilityCreateWithName(nil, refused) == nil, "\(refused)")
            #expect(SCError() == Int32(kSCStatusInvalidArgument))
        }
        #expect(String(cString: SCErrorString(SCError())) == "Invalid argument")
        var unix = sockaddr()
        unix.sa_family = sa_family_t(AF_UNIX)
        #expect(SCNetworkReachabilityCreateWithAddress(nil, &unix) == nil)
        #expect(SCNetworkReachabilityCreateWithAddressPair(nil, nil, nil) == nil)
        #expect(addressPairReference(local: "192.0.2.2", remote: "198.51.100.1")?.target == .address("198.51.100.1"))
    }

    @Test func scErrorIsPerThread() async {
        _ = SCNetworkReachabilityCreateWithName(nil, "127.1")
        #expect(SCError() == Int32(kSCStatusInvalidArgument))
        let other = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: SCError()) }
        }
        #expect(other == Int32(kSCStatusOK))
    }

    /// The context's retain runs once per registration and release once it is over; the
    /// description comes from copyDescription, through `as CFString`.
    @Test func contextIsRetainedOnceAndReleasedWhenReplacedOrGone() throws {
        var reference = SCNetworkReachabilityCreateWithName(nil, "example.org")
        let callback: SCNetworkReachabilityCallBack = { _, _, _ in }
        final class Info {}
        let info = Info()
        let retained = BoxCount()
        var context = SCNetworkReachabilityContext(
            version: 0, info: Unmanaged.passUnretained(info).toOpaque(),
            retain: { pointer in
                retained.alive.add(1, ordering: .relaxed)
                return UnsafeRawPointer(Unmanaged<Info>.fromOpaque(pointer).retain().toOpaque())
            },
            release: { pointer in
                retained.alive.subtract(1, ordering: .relaxed)
                Unmanaged<Info>.fromOpaque(pointer).release()
            },
            copyDescription: { _ in Unmanaged.passRetained("the info" as CFString) })
        #expect(SCNetworkReachabilitySetCallback(reference!, callback, &context))
        #expect(retained.value == 1)
        #expect(String(describing: reference!).contains("context = the info"))
        #expect(String(describing: reference!).contains("name = example.org"))
        #expect(SCNetworkReachabilitySetCallback(reference!, callback, &context))
        #expect(retained.value == 1, "the first registration was released")
        SCNetworkReachabilitySetCallback(reference!, nil, nil)
        #expect(retained.value == 0)
        #expect(SCNetworkReachabilitySetCallback(reference!, callback, &context))
        reference = nil
        #expect(retained.value == 0, "released with the reference")
    }
}
