// watch-path [--not KIND]...: the host's path now, then a line each time it changes.
// As code written for NWPathMonitor does it: a handler, a queue, start(queue:). reachd answers
// when it runs; without it the library derives the same paths in this process.
import Dispatch
import Reachability
#if canImport(Glibc)
import Glibc
#endif

var prohibited: Set<InterfaceKind> = []
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    guard argument == "--not", let name = arguments.popFirst(), let kind = InterfaceKind(rawValue: name) else {
        print("usage: watch-path [--not KIND]... (kinds: \(InterfaceKind.allCases.map(\.rawValue).joined(separator: ", ")))")
        exit(2)
    }
    prohibited.insert(kind)
}

let monitor = PathMonitor(prohibitedInterfaceTypes: prohibited)
monitor.pathUpdateHandler = { path in
    switch path.status {
    case .satisfied:
        let interfaces = path.availableInterfaces.map { "\($0.name) (\($0.kind))" }.joined(separator: ", ")
        print("satisfied via \(path.primaryInterface): \(interfaces); IPv4 \(path.supportsIPv4), IPv6 \(path.supportsIPv6)")
    case .unsatisfied, .requiresConnection:
        print("\(path.status): \(path.unsatisfiedReason.map { "\($0)" } ?? "no reason given")")
    }
    fflush(nil)  // each line as it comes, even into a pipe
}
monitor.start(queue: DispatchQueue(label: "paths"))
dispatchMain()
