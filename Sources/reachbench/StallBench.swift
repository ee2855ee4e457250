#if canImport(Glibc)
import Glibc
#endif
import Reachability

/// One size of the stall poll: `sockets` established TCP connections, timed polls of them.
struct StallPollMeasurement: Sendable {
    var sockets: Int
    /// "per-family" (two inet_diag_req_v2 dumps) or "both" (one TCPDIAG_GETSOCK dump).
    var request: String
    /// Sockets the dump returned (the bench's own connections; nothing else lives in the namespace).
    var dumped: Int
    /// dump (sock_diag request, reads, decode) + evaluate, per poll.
    var total: Summary
    var dump: Summary
    var evaluate: Summary
}

/// Issue 22: the cost of one passive stall poll. Two namespaces of the bench's own joined by a veth
/// (client 192.0.2.2, server 192.0.2.1 and, beyond the client's subnet as stall detection judges
/// only such peers, 203.0.113.1 routed through it); the client opens N TCP connections to a listener on the
/// server, each sends one segment, and the client namespace is then dumped and judged N times over:
/// `TCPSocketDumper.dump` (the IPv4 and IPv6 requests, every datagram read and decoded) followed
/// by `StallEvaluator.poll` with the client's address, so every socket is attributed and judged.
/// The server's ends wait in the accept queue (no descriptor each), so only the client's N sockets
/// exist in the dumped namespace.
enum StallBench {
    static func measure(sizes: [Int], polls: Int) throws(BenchError) -> [StallPollMeasurement] {
        note("reachbench: stall: namespaces reachbench-\(getpid())-stc and -sts")
        let client = try BenchNamespace(suffix: "stc")
        defer { client.destroy() }
        let server = try BenchNamespace(suffix: "sts")
        defer { server.destroy() }
        try client.ip("link add c0 type veth peer name s0 netns \(server.name)")
        try client.ip("addr add 192.0.2.2/24 dev c0")
        try server.ip("addr add 192.0.2.1/24 dev s0")
        try client.ip("link set c0 up")
        try server.ip("link set s0 up")
        try server.ip("addr add 203.0.113.1/32 dev s0")
        try client.ip("route add 203.0.113.0/24 via 192.0.2.1 dev c0")
        // Room for every connection in the accept queue without accepting (somaxconn is per namespace).
        let largest = sizes.max() ?? 0
        try server.writeSysctls(["/proc/sys/net/core/somaxconn": "\(max(largest + 1024, 4096))"])
        try client.writeSysctls(["/proc/sys/net/ipv4/ip_local_port_range": "10000 65000"])
        let port: UInt16 = 8080
        let listener = try server.inside { () -> Result<Int32, BenchError> in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return .failure(.system("socket")) }
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            let bound = IPAddress("203.0.113.1")!.withSocketAddress(port: port) { bind(fd, $0, $1) }
            guard bound == 0, listen(fd, Int32(max(largest + 1024, 4096))) == 0 else {
                close(fd)
                return .failure(.system("bind/listen 203.0.113.1:\(port)"))
            }
            return .success(fd)
        }
        defer { close(listener) }
        let link = try client.index(of: "c0")
        let addresses = [Address(interfaceIndex: link, prefix: IPPrefix(IPAddress("192.0.2.2")!, length: 24))]

        var connections: [Int32] = []
        defer { for fd in connections { close(fd) } }
        var results: [StallPollMeasurement] = []
        for size in sizes.sorted() {
            let fresh = try client.inside { () -> Result<[Int32], BenchError> in
                var made: [Int32] = []
                for _ in connections.count..<size {
                    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                    guard fd >= 0 else {
                        for fd in made { close(fd) }
                        return .failure(.system("socket (connection \(connections.count + made.count + 1))"))
                    }
                    made.append(fd)
                    let connected = IPAddress("203.0.113.1")!.withSocketAddress(port: port) { connect(fd, $0, $1) }
                    guard connected == 0 else {
                        for fd in made { close(fd) }
                        return .failure(.system("connect (connection \(connections.count + made.count))"))
                    }
                    _ = send(fd, "x", 1, Int32(MSG_NOSIGNAL))
                }
                return .success(made)
            }
            connections += fresh
            for request in [TCPSocketDumper.Request.perFamily, .bothFamilies] {
                results.append(try measure(client, request: request, size: size, polls: polls, link: link, addresses: addresses))
            }
            results.append(try kernelFloor(client, size: size, polls: polls))
        }
        return results
    }

    static func measure(
        _ client: BenchNamespace, request: TCPSocketDumper.Request, size: Int, polls: Int, link: Int32, addresses: [Address]
    ) throws(BenchError) -> StallPollMeasurement {
        let name = request == .perFamily ? "per-family" : "both"
        note("reachbench: stall: \(size) connections, \(polls) polls, \(name)")
        var dumper: TCPSocketDumper
        do {
            dumper = try TCPSocketDumper(namespacePath: client.path, request: request)
        } catch {
            throw BenchError("sock_diag socket: \(error)")
        }
        var evaluator = StallEvaluator()
        var totals: [UInt64] = []
        var dumps: [UInt64] = []
        var evaluations: [UInt64] = []
        var dumped = 0
        let warmup = 3
        for poll in 0..<(polls + warmup) {
            let start = monotonicNanoseconds()
            let samples: [TCPSocketSample]
            do {
                samples = try dumper.dump(timeout: .seconds(10))
            } catch {
                throw BenchError("sock_diag dump: \(error)")
            }
            let dumpedAt = monotonicNanoseconds()
            let report = evaluator.poll(at: .seconds(20 * poll), samples: samples, addresses: addresses)
            let end = monotonicNanoseconds()
            dumped = samples.count
            if report.link(link).evidence.socketsJudged != size {
                throw BenchError("stall: \(report.link(link).evidence.socketsJudged) sockets judged of \(size) (dumped \(samples.count))")
            }
            guard poll >= warmup else { continue }
            totals.append(end - start)
            dumps.append(dumpedAt - start)
            evaluations.append(end - dumpedAt)
        }
        return StallPollMeasurement(
            sockets: size, request: name, dumped: dumped, total: Summary(totals), dump: Summary(dumps),
            evaluate: Summary(evaluations))
    }

    /// The kernel's share: the same single dump of both families, read into one buffer with
    /// only the netlink headers walked (to find NLMSG_DONE), nothing decoded and nothing judged.
    static func kernelFloor(_ client: BenchNamespace, size: Int, polls: Int) throws(BenchError) -> StallPollMeasurement {
        note("reachbench: stall: \(size) connections, \(polls) polls, kernel floor")
        let fd = try client.inside { () -> Result<Int32, BenchError> in
            let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 4)  // NETLINK_SOCK_DIAG
            return fd >= 0 ? .success(fd) : .failure(.system("socket(NETLINK_SOCK_DIAG)"))
        }
        defer { close(fd) }
        // nlmsghdr (len 76, TCPDIAG_GETSOCK 18, NLM_F_REQUEST|NLM_F_DUMP) + inet_diag_req: family 0,
        // ext 1 << (INET_DIAG_INFO - 1), sockid zero, states ESTABLISHED|SYN_SENT|SYN_RECV, dbs 0.
        var request = [UInt8](repeating: 0, count: 76)
        request[0] = 76
        request[4] = 18
        request[6] = 0x01
        request[7] = 0x03
        request[19] = 2
        request[68] = 0b1110
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var samples: [UInt64] = []
        var dumped = 0
        for poll in 0..<(polls + 3) {
            let start = monotonicNanoseconds()
            guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count else {
                throw BenchError.system("send sock_diag request")
            }
            var messages = 0
            var done = false
            while !done {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { throw BenchError.system("recv sock_diag") }
                var offset = 0
                while offset + 16 <= count {
                    let length = Int(buffer[offset]) | Int(buffer[offset + 1]) << 8 | Int(buffer[offset + 2]) << 16
                    let type = Int(buffer[offset + 4]) | Int(buffer[offset + 5]) << 8
                    if type == 2 || type == 3 { done = true } else { messages += 1 }
                    guard length >= 16 else { break }
                    offset += (length + 3) & ~3
                }
            }
            let end = monotonicNanoseconds()
            dumped = messages
            if poll >= 3 { samples.append(end - start) }
        }
        let none = Summary([0])
        return StallPollMeasurement(
            sockets: size, request: "kernel floor", dumped: dumped, total: Summary(samples), dump: Summary(samples), evaluate: none)
    }
}
