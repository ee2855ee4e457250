// Records the rtnetlink datagrams reachd reads, as seeds for the netlink fuzz target.
//
//   record-netlink OUTDIR SCENARIO.batch...     (as root, in a network namespace of its own:
//                                                scripts/fuzz-record does both)
//
// For each scenario: joins the groups KernelSource joins, runs `ip -force -batch SCENARIO`, and
// saves every notification datagram the monitor socket then holds; then saves the datagrams of a
// dump of links, addresses, routes and rules, and the kernel's answers to route lookups (as
// RouteQuery asks them, errors included). Scenarios run in order in the same namespace, each
// building on the last. Datagrams longer than `pieceBytes` are cut at message boundaries: each
// piece is still a datagram the decoder must take, and small seeds make the fuzzer fast.
//
// Compiled by scripts/fuzz-record together with the Reachability sources, so the sockets and
// requests are reachd's own (NetlinkSocket, NetlinkRequest).
#if canImport(Glibc)
import Glibc
#endif

@main
struct RecordNetlink {
    static let pieceBytes = 4096

    static func main() throws {
        let arguments = CommandLine.arguments
        guard arguments.count >= 3 else {
            complain("usage: record-netlink OUTDIR SCENARIO.batch...")
            exit(2)
        }
        // KernelSource's sockets: a monitor in the groups it joins, a blocking one for requests.
        let monitor = try NetlinkSocket(nonBlocking: true)
        monitor.setReceiveBuffer(bytes: 8 << 20)
        try monitor.join(groups: NetlinkSocket.reachabilityGroups)
        let requests = try NetlinkSocket(nonBlocking: false)
        requests.setReceiveTimeout(milliseconds: 2000)
        var recorder = Recorder(directory: arguments[1], monitor: monitor, requests: requests)
        for scenario in arguments[2...] {
            try recorder.record(scenario: scenario)
        }
        print("record-netlink: \(recorder.saved) files in \(arguments[1])")
    }
}

struct Recorder: ~Copyable {
    let directory: String
    let monitor: NetlinkSocket
    let requests: NetlinkSocket
    var buffer = [UInt8](repeating: 0, count: 64 << 10)
    var sequence: UInt32 = 0
    var saved = 0
    var name = ""

    init(directory: String, monitor: consuming NetlinkSocket, requests: consuming NetlinkSocket) {
        self.directory = directory
        self.monitor = monitor
        self.requests = requests
    }

    mutating func record(scenario path: String) throws {
        let file = path.split(separator: "/").last ?? "scenario"
        name = String(file.split(separator: ".").first ?? file)
        // `ip -batch` lines take no options: a file named *.inet6.batch runs under `ip -6`
        // (IPv6 rules need it: `rule add from 2001:db8::/32` alone is read as IPv4).
        runIP(["ip", "-force"] + (path.hasSuffix(".inet6.batch") ? ["-6"] : []) + ["-batch", path])
        try drainNotifications()
        for (type, label) in [(RT.getLink, "links"), (RT.getAddress, "addresses"), (RT.getRoute, "routes"), (UInt16(34), "rules")] {
            try dump(type: type, label: label)
        }
        let destinations: [(String, Int32?)] = [
            ("193.0.14.129", nil), ("2001:7fd::1", nil), ("192.0.2.10", nil), ("172.16.1.1", nil),
            ("198.18.0.1", nil), ("198.20.0.1", nil), ("2001:db8:dead::1", nil), ("198.51.100.7", nil),
            ("203.0.113.200", nil), ("fe80::1", 1), ("127.0.0.1", nil),
        ]
        for (text, interface) in destinations {
            guard let address = IPAddress(text) else { continue }
            try lookup(address, outputInterface: interface)
        }
    }

    /// Notifications the scenario caused: read until the socket stays quiet for 200 ms.
    private mutating func drainNotifications() throws {
        var count = 0
        while true {
            var descriptor = pollfd(fd: monitor.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 200) > 0 else { return }
            if case let .datagram(length, _) = try monitor.receive(into: &buffer) {
                save(buffer[..<length], label: "event-\(count)")
                count += 1
            }
        }
    }

    private mutating func dump(type: UInt16, label: String) throws {
        sequence += 1
        try requests.send(NetlinkRequest.dump(type: type, sequence: sequence))
        var count = 0
        while true {
            guard case let .datagram(length, _) = try requests.receive(into: &buffer) else { return }
            save(buffer[..<length], label: "dump-\(label)-\(count)")
            count += 1
            let batch = buffer.withUnsafeBytes { NetlinkDecoder.decode(UnsafeRawBufferPointer(rebasing: $0[..<length])) }
            if batch.messages.contains(where: { $0.message == .done }) || !batch.errors.isEmpty { return }
        }
    }

    private mutating func lookup(_ address: IPAddress, outputInterface: Int32?) throws {
        sequence += 1
        try requests.send(NetlinkRequest.routeLookup(destination: address, outputInterface: outputInterface, sequence: sequence))
        if case let .datagram(length, _) = try requests.receive(into: &buffer) {
            save(buffer[..<length], label: "lookup-\(address)")
        }
    }

    /// Writes `datagram`, cut into pieces of whole messages of at most `pieceBytes` each.
    private mutating func save(_ datagram: ArraySlice<UInt8>, label: String) {
        let bytes = Array(datagram)
        var pieces: [[UInt8]] = []
        var piece: [UInt8] = []
        var offset = 0
        while offset + 16 <= bytes.count {
            let length = Int(bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) })
            let end = min(bytes.count, offset + netlinkAlign(max(length, 16)))
            if !piece.isEmpty, piece.count + (end - offset) > RecordNetlink.pieceBytes {
                pieces.append(piece)
                piece = []
            }
            piece += bytes[offset..<end]
            offset = end
        }
        if !piece.isEmpty { pieces.append(piece) }
        for (index, piece) in pieces.enumerated() {
            let path = "\(directory)/\(name)-\(label.split(separator: ":", omittingEmptySubsequences: false).joined(separator: "_"))" + (pieces.count > 1 ? "-\(index)" : "")
            guard let file = fopen(path, "wb") else {
                perror(path)
                continue
            }
            _ = piece.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
            fclose(file)
            saved += 1
        }
    }
}

/// Runs a command and waits for it; its output goes to ours.
private func runIP(_ arguments: [String]) {
    var pid = pid_t()
    let argv = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    let spawned = posix_spawnp(&pid, arguments[0], nil, nil, argv, environ)
    guard spawned == 0 else {
        complain("record-netlink: cannot run \(arguments[0]): \(String(cString: strerror(spawned)))")
        exit(1)
    }
    var status: Int32 = 0
    _ = waitpid(pid, &status, 0)
}

/// A line on standard error (write(2): the C `stderr` global is not concurrency-safe in Swift 6).
private func complain(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}
