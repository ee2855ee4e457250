// reachability-callback NAME: NAME's flags now, then a line each time they change.
// The same source builds on Apple's platforms against their SystemConfiguration framework
// (with `import Foundation` for the C library there).
import SystemConfiguration  // brings Dispatch and the C library along, as Apple's does

func describe(_ flags: SCNetworkReachabilityFlags) -> String {
    let names: [(SCNetworkReachabilityFlags, String)] = [
        (.reachable, "reachable"), (.connectionRequired, "connectionRequired"), (.isDirect, "isDirect"),
        (.isLocalAddress, "isLocalAddress"), (.isWWAN, "isWWAN"), (.transientConnection, "transientConnection"),
    ]
    let set = names.filter { flags.contains($0.0) }.map(\.1)
    return set.isEmpty ? "not reachable" : set.joined(separator: "|")
}

guard CommandLine.arguments.count == 2 else {
    print("usage: reachability-callback NAME (a host name or an address)")
    exit(2)
}
let name = CommandLine.arguments[1]
guard let target = SCNetworkReachabilityCreateWithName(nil, name) else {
    print("\(name): not a host name or address (SCError \(SCError()))")
    exit(2)
}
var flags = SCNetworkReachabilityFlags()
if SCNetworkReachabilityGetFlags(target, &flags) {
    print("\(name): \(describe(flags))")
} else {
    print("\(name): unknown (SCError \(SCError()))")
}
fflush(nil)  // each line as it comes, even into a pipe
SCNetworkReachabilitySetCallback(target, { _, flags, _ in
    print("changed: \(describe(flags))")
    fflush(nil)
}, nil)
guard SCNetworkReachabilitySetDispatchQueue(target, DispatchQueue(label: "reachability")) else {
    print("\(name): cannot be followed (SCError \(SCError()))")
    exit(1)
}
dispatchMain()
