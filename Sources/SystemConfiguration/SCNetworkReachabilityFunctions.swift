@_exported import Dispatch
#if canImport(Glibc)
@_exported import Glibc
#endif

// Apple's SCNetworkReachability functions, with the same names, argument labels and types.
// Apple's framework brings the C library and Dispatch along (its headers include
// <sys/socket.h> and <dispatch/dispatch.h>); the two exports above do the same here, so a file
// that imports only SystemConfiguration still sees `sockaddr`, `AF_INET` and `DispatchQueue`.
//
// Functions that return Bool discard it silently, as imported C functions do on Apple
// platforms: `SCNetworkReachabilitySetCallback(ref, nil, nil)` is a statement there and here.

/// A reference for a host name (or an address written as text). Never blocks: the name is
/// looked up when its flags are asked for. nil, with `kSCStatusInvalidArgument`, for a text
/// that can be neither (reachd's rules: `127.1` or `host.123` are refused, not guessed at).
public func SCNetworkReachabilityCreateWithName(
    _ allocator: CFAllocator?, _ nodename: UnsafePointer<CChar>
) -> SCNetworkReachability? {
    guard let target = SCTarget(nodeName: String(cString: nodename)) else { return fail(kSCStatusInvalidArgument) }
    return made(target)
}

/// A reference for an address: an IPv4 or IPv6 socket address (`sockaddr_in6` whole for
/// AF_INET6). `0.0.0.0` and `::` stand for general connectivity: the host's own answer.
public func SCNetworkReachabilityCreateWithAddress(
    _ allocator: CFAllocator?, _ address: UnsafePointer<sockaddr>
) -> SCNetworkReachability? {
    guard let text = addressText(address), let target = SCTarget(address: text) else {
        return fail(kSCStatusInvalidArgument)
    }
    return made(target)
}

/// A reference for a pair of addresses. Answered for the remote address (the local one when
/// there is no remote): the library's checks ask the kernel for the route to a destination and
/// do not take a source address, so the local address does not choose the route here.
public func SCNetworkReachabilityCreateWithAddressPair(
    _ allocator: CFAllocator?, _ localAddress: UnsafePointer<sockaddr>?, _ remoteAddress: UnsafePointer<sockaddr>?
) -> SCNetworkReachability? {
    guard let address = remoteAddress ?? localAddress, let text = addressText(address),
        let target = SCTarget(address: text)
    else { return fail(kSCStatusInvalidArgument) }
    if remoteAddress != nil, let localAddress, addressText(localAddress) == nil { return fail(kSCStatusInvalidArgument) }
    return made(target)
}

/// The target's flags now. An address answers at once from the kernel's routes. A host name
/// answers within `DefaultTimeout=` of reachd.conf (5 s unless configured), whatever DNS does:
/// not reachable then (Apple's GetFlags waits as long as DNS does, 30 s and more). A scheduled
/// name answers from its last lookup without waiting. False, with SCError() set, only when
/// neither reachd nor the in-process library could answer.
@discardableResult
public func SCNetworkReachabilityGetFlags(
    _ target: SCNetworkReachability, _ flags: UnsafeMutablePointer<SCNetworkReachabilityFlags>
) -> Bool {
    guard let answer = target.flags() else {
        SCErrorState.set(kSCStatusReachabilityUnknown)
        return false
    }
    flags.pointee = answer
    SCErrorState.set(kSCStatusOK)
    return true
}

/// Sets (or with nil, clears) the callback and its context. `context.retain` runs here on
/// `info`; `context.release` runs when this registration is replaced or cleared, or the
/// reference goes away, and never while one of its callbacks is still running.
@discardableResult
public func SCNetworkReachabilitySetCallback(
    _ target: SCNetworkReachability, _ callout: SCNetworkReachabilityCallBack?,
    _ context: UnsafeMutablePointer<SCNetworkReachabilityContext>?
) -> Bool {
    target.setCallback(callout, context: context?.pointee)
    SCErrorState.set(kSCStatusOK)
    return true
}

/// Schedules the callback on `queue` (nil: unschedules; reachd's watch is released). While
/// scheduled the callback runs on `queue` once per change of the target's flags: never at
/// scheduling time for an address (GetFlags gives the starting point), after the first lookup
/// for a host name. False, with SCError() set, when the target cannot be followed at all.
@discardableResult
public func SCNetworkReachabilitySetDispatchQueue(_ target: SCNetworkReachability, _ queue: DispatchQueue?) -> Bool {
    guard target.setQueue(queue) else {
        SCErrorState.set(kSCStatusFailed)
        return false
    }
    SCErrorState.set(kSCStatusOK)
    return true
}

private func made(_ target: SCTarget) -> SCNetworkReachability {
    SCErrorState.set(kSCStatusOK)
    return SCNetworkReachability(target: target, service: .current)
}

private func fail(_ status: Int) -> SCNetworkReachability? {
    SCErrorState.set(status)
    return nil
}
