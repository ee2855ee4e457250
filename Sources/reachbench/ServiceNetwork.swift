import Reachability

#if canImport(Glibc)
import Glibc
#endif

/// The network for host checks and for the daemon, built as the library's DNS tests build it:
/// a client namespace (`reachbench-<pid>-c`) whose uplink `up0` (192.0.2.2/24, default via
/// 192.0.2.1) is a veth to a server namespace (`reachbench-<pid>-s`). The server holds the
/// gateway address on `up0s` and, on its loopback, 198.51.100.53 (dnsmasq, answering) and
/// 198.51.100.54 (the black hole). So every DNS query leaves the client over its uplink, and
/// setting `up0s` down takes the uplink's carrier away, as a dead Wi-Fi uplink would.
final class ServiceNetwork {
    let client: BenchNamespace
    let server: BenchNamespace
    /// A private directory for resolv.conf files, logs and the bus socket (`/tmp/reachbench-XXXXXX`).
    let directory: String
    /// `up0` in the client namespace and its peer `up0s` in the server namespace.
    let uplink: Int32
    let peer: Int32
    /// Requests only, in the server namespace: flips `up0s`.
    let flapper: RawNetlink
    private var blackHole: Int32 = -1
    private(set) var dnsmasq: ChildProcess?
    private var cleanupSlots: [Int] = []

    static let clientAddress = "192.0.2.2"
    static let gateway = "192.0.2.1"
    static let answering = "198.51.100.53"
    static let blackHoleAddress = "198.51.100.54"
    /// What dnsmasq answers for `up.test`.
    static let upAddress = "203.0.113.10"

    var blackHoleResolvConf: String { directory + "/resolv-blackhole.conf" }
    var answeringResolvConf: String { directory + "/resolv-answering.conf" }
    var dnsmasqLog: String { directory + "/dnsmasq.log" }

    init(mountSysfs: Bool) throws(BenchError) {
        var template = Array("/tmp/reachbench-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else { throw BenchError.system("mkdtemp") }
        directory = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        cleanupSlots.append(Cleanup.register(.directory, path: directory))

        server = try BenchNamespace(suffix: "s")
        client = try BenchNamespace(suffix: "c")
        if mountSysfs && !client.mountSysfs() {
            note("reachbench: could not mount a sysfs for \(client.name); the monitor reads no sysfs facts")
        }
        // Made in the client and then moved, so the two ends keep different interface indexes.
        try client.batch(["link add up0 type veth peer name up0s", "link set up0s netns \(server.name)"])
        try server.batch([
            "addr add \(Self.gateway)/24 dev up0s",
            "link set up0s up",
            "addr add \(Self.answering)/32 dev lo",
            "addr add \(Self.blackHoleAddress)/32 dev lo",
        ])
        try client.batch([
            "addr add \(Self.clientAddress)/24 dev up0",
            "link set up0 up",
            "route add default via \(Self.gateway) dev up0",
        ])
        uplink = try client.index(of: "up0")
        peer = try server.index(of: "up0s")
        // The kernel's linkwatch treats a carrier change as urgent only when a link's index differs
        // from its peer's (iflink); otherwise a carrier loss within 1 s of the link's previous
        // event is held back until that second is over (its rate limit for physical NICs).
        guard uplink != peer else {
            throw BenchError("up0 and up0s have the same interface index \(uplink): carrier losses would be rate-limited")
        }
        flapper = try RawNetlink(in: server, groups: 0)
        for (file, nameserver) in [(blackHoleResolvConf, Self.blackHoleAddress), (answeringResolvConf, Self.answering)] {
            cleanupSlots.append(Cleanup.register(.file, path: file))
            try writeFile(file, "nameserver \(nameserver)\n")
        }
        let listener = try RawNetlink(in: client, groups: RawNetlink.groupsAll)
        _ = listener.waitForQuiet(quietMilliseconds: 300, limitMilliseconds: 5_000)
    }

    deinit { close() }

    /// Registers a file in the directory for removal at exit; returns its path.
    func file(_ name: String) -> String {
        let path = directory + "/" + name
        cleanupSlots.append(Cleanup.register(.file, path: path))
        return path
    }

    /// Registers a subdirectory (created here) for removal at exit; returns its path. Asked
    /// again (a second reachd of the same run: `--only bus,hostload`), it is the same directory.
    func subdirectory(_ name: String) throws(BenchError) -> String {
        let path = directory + "/" + name
        if mkdir(path, 0o700) == 0 {
            cleanupSlots.append(Cleanup.register(.directory, path: path))
        } else if errno != EEXIST {
            throw BenchError.system("mkdir \(path)")
        }
        return path
    }

    /// A monitor on the client namespace that asks the nameserver of `resolvConf`.
    func configuration(resolvConf: String) -> CoreConfiguration {
        var configuration = CoreConfiguration()
        configuration.namespacePath = client.path
        configuration.sysfsRoot = client.sysfsRoot ?? "/nonexistent-reachbench-sysfs"
        configuration.resolvConfPath = resolvConf
        return configuration
    }

    /// The DNS black hole: a UDP socket bound to 198.51.100.54:53 in the server namespace that
    /// never reads. Queries vanish without an ICMP error, as with a dead upstream.
    func startBlackHole() throws(BenchError) {
        guard blackHole < 0 else { return }
        blackHole = try server.inside { () -> Result<Int32, BenchError> in
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return .failure(BenchError.system("socket")) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(53).bigEndian
            address.sin_addr.s_addr = (UInt32(198) << 24 | UInt32(51) << 16 | UInt32(100) << 8 | 54).bigEndian
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                let error = BenchError.system("bind \(Self.blackHoleAddress):53")
                Glibc.close(fd)
                return .failure(error)
            }
            // Room for every query of a batch, so the bench can count them afterwards.
            var size: Int32 = 16 << 20
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
            return .success(fd)
        }
    }

    /// Reads the queries queued at the black hole (it never reads while a measurement runs):
    /// the name asked in each datagram, in order.
    func drainBlackHole() -> [String] {
        guard blackHole >= 0 else { return [] }
        var names: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(blackHole, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return names }
            names.append(Self.questionName(buffer[..<count]))
        }
    }

    /// The QNAME of a DNS query ("" when malformed).
    static func questionName(_ datagram: ArraySlice<UInt8>) -> String {
        var labels: [String] = []
        var offset = datagram.startIndex + 12
        while offset < datagram.endIndex {
            let length = Int(datagram[offset])
            guard length > 0 else { return labels.joined(separator: ".") }
            guard length < 64, offset + 1 + length <= datagram.endIndex else { return "" }
            labels.append(String(decoding: datagram[(offset + 1)..<(offset + 1 + length)], as: UTF8.self))
            offset += 1 + length
        }
        return ""
    }

    /// dnsmasq on 198.51.100.53 in the server namespace, in the foreground (so its pid is ours to
    /// stop): `up.test` has an A record with a 300 s TTL, other names under `.test` get NXDOMAIN.
    /// Every query is logged, so the bench can count what reached it.
    func startDNSMasq() throws(BenchError) {
        guard dnsmasq == nil else { return }
        guard let binary = findExecutable(["/usr/sbin/dnsmasq", "/usr/bin/dnsmasq"]) else {
            throw BenchError("dnsmasq not found (apt-get install dnsmasq-base)")
        }
        let log = file("dnsmasq.log")
        let pidFile = file("dnsmasq.pid")
        let process = try ChildProcess(client.ipTool, [
            "netns", "exec", server.name, binary, "--keep-in-foreground", "--conf-file=/dev/null",
            "--listen-address=\(Self.answering)", "--bind-interfaces", "--no-resolv", "--no-hosts",
            "--pid-file=\(pidFile)", "--user=root", "--group=root", "--log-queries", "--log-facility=\(log)",
            "--local=/test/", "--local-ttl=300", "--cache-size=0", "--host-record=up.test,\(Self.upAddress)",
        ])
        dnsmasq = process
        // Ready once it has bound its socket and logged that it started.
        let deadline = monotonicNanoseconds() + 5_000_000_000
        while !(readSmallFile(log) ?? "").contains("started") {
            guard process.isRunning else { throw BenchError("dnsmasq \(ChildProcess.describe(process.exitStatus)); see \(log)") }
            guard monotonicNanoseconds() < deadline else { throw BenchError("dnsmasq did not start within 5 s") }
            sleepMilliseconds(5)
        }
        sleepMilliseconds(20)
    }

    /// How many queries (A or AAAA) for `name` dnsmasq logged.
    func dnsmasqQueries(for name: String) -> Int {
        (readSmallFile(dnsmasqLog, limit: 1 << 22) ?? "").split(separator: "\n")
            .filter { $0.contains("query[") && $0.contains(" \(name) ") }.count
    }

    /// Sets the uplink's peer down (the uplink loses carrier) or up, and waits for the kernel's ACK.
    func setPeer(up: Bool) throws(BenchError) {
        try flapper.setAdminState(index: peer, up: up)
        try flapper.readAck()
    }

    /// Stops the servers and removes the namespaces and files. Idempotent.
    func close() {
        dnsmasq?.stop(signal: SIGKILL)
        dnsmasq = nil
        if blackHole >= 0 {
            Glibc.close(blackHole)
            blackHole = -1
        }
        client.destroy()
        server.destroy()
        for slot in cleanupSlots.reversed() { Cleanup.perform(slot) }
        cleanupSlots = []
    }
}
