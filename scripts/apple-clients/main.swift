// The driver of scripts/check-apple-clients: runs the published SCNetworkReachability clients
// (Alamofire's NetworkReachabilityManager, the single-file Reachability.swift), compiled
// unmodified, through a carrier flap and default-route changes, and checks what each reports.
// Runs inside the namespace the script makes: up0 (veth peer up0p) with default via 192.0.2.1.
import Alamofire
import Foundation
import Reachability

func ip(_ arguments: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
    process.arguments = arguments.split(separator: " ").map(String.init)
    try! process.run()
    process.waitUntilExit()
}

let lock = NSLock()
var seen: [String: [String]] = [:]
func record(_ client: String, _ status: String) {
    lock.lock()
    seen[client, default: []].append(status)
    lock.unlock()
    print("\(client): \(status)")
}

let queue = DispatchQueue(label: "apple-clients.listener")
let manager = NetworkReachabilityManager()!
manager.startListening(onQueue: queue) { status in
    record("alamofire", status == .notReachable ? "notReachable" : status == .unknown ? "unknown" : "reachable")
}
let reachability = try! Reachability(notificationQueue: queue)
reachability.whenReachable = { record("reachability.swift", "reachable \($0.connection)") }
reachability.whenUnreachable = { record("reachability.swift", "unreachable \($0.connection)") }
try! reachability.startNotifier()

// A host name: answered within DefaultTimeout= (5 s) whatever DNS does, never longer.
let started = Date()
let host = NetworkReachabilityManager(host: "name.invalid")!
_ = host.status
let took = Date().timeIntervalSince(started)
print("NetworkReachabilityManager(host:).status took \(Int(took * 1000)) ms")

for step in ["link set up0p down", "link set up0p up", "route del default", "route add default via 192.0.2.1 dev up0"] {
    Thread.sleep(forTimeInterval: 1)
    print("-- ip \(step)")
    ip(step)
}
Thread.sleep(forTimeInterval: 1)
manager.stopListening()
reachability.stopNotifier()

let expected = [
    "alamofire": ["reachable", "notReachable", "reachable", "notReachable", "reachable"],
    "reachability.swift": ["reachable WiFi", "unreachable No Connection", "reachable WiFi", "unreachable No Connection", "reachable WiFi"],
]
lock.lock()
let matches = seen == expected && took < 6
lock.unlock()
print(matches ? "OK: both clients reported every change, once" : "FAILED: expected \(expected), saw \(seen)")
exit(matches ? 0 : 1)
