import Foundation
@testable import Reachability

/// A real DNS server (dnsmasq) answering inside a test namespace, with its queries logged so a
/// test can prove that no query was sent.
final class DNSMasqServer: @unchecked Sendable {
    let address: String
    private let namespace: TestNamespace
    private let directory: URL
    private var pidFile: URL { directory.appendingPathComponent("dnsmasq.pid") }
    private var logFile: URL { directory.appendingPathComponent("queries.log") }

    /// `records`: name -> addresses (A and AAAA). Unknown names under `.test` get NXDOMAIN.
    init(in namespace: TestNamespace, address: String, records: [String: [String]], ttl: Int = 300) throws {
        self.address = address
        self.namespace = namespace
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("dnsmasq-\(namespace.name)-\(address)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var arguments = [
            "--conf-file=/dev/null", "--listen-address=\(address)", "--bind-interfaces", "--no-resolv", "--no-hosts",
            "--pid-file=\(pidFile.path)", "--user=root", "--group=root", "--log-queries",
            "--log-facility=\(logFile.path)", "--local=/test/", "--local-ttl=\(ttl)", "--cache-size=0",
        ]
        for (name, addresses) in records {
            for address in addresses { arguments.append("--host-record=\(name),\(address)") }
        }
        try namespace.exec("/usr/sbin/dnsmasq", arguments)
        // dnsmasq forks; it is ready once it wrote its pid file and the socket is bound.
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: pidFile.path) { usleep(5000) }
    }

    deinit {
        if let text = try? String(contentsOf: pidFile, encoding: .utf8), let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            kill(pid, SIGKILL)  // as DNSServers: nothing a test starts may outlive it
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// How many queries dnsmasq logged for `name`.
    func queries(for name: String) -> Int {
        let log = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
        return log.split(separator: "\n").filter { $0.contains("query[") && $0.contains(" \(name) ") }.count
    }
}

/// The DNS black hole: a UDP socket bound to ADDR:53 that never reads. Queries vanish without an
/// ICMP error, which is what hangs everyone else's resolver (a closed port would fail at once).
final class DNSBlackHole: Sendable {
    let fd: Int32

    init(in namespace: TestNamespace, address: String) throws {
        guard let ip = IPAddress(address), case let .v4(raw) = ip else { throw CommandFailed(command: "black hole", status: 0, output: address) }
        fd = try NetworkNamespace.run(in: namespace.path) { () -> Result<Int32, SystemError> in
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return .failure(SystemError("socket")) }
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = in_port_t(53).bigEndian
            sin.sin_addr.s_addr = raw.bigEndian
            let bound = withUnsafePointer(to: &sin) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(fd)
                return .failure(SystemError("bind \(address):53"))
            }
            return .success(fd)
        }
    }

    deinit { close(fd) }

    /// Reads every query queued so far (without waiting) and returns the names asked, in order,
    /// one per datagram: the proof of which lookups put a query on the wire.
    func drainQueriedNames() -> [String] {
        var names: [String] = []
        var buffer = [UInt8](repeating: 0, count: 1500)
        while true {
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count > 0 else { break }
            names.append(Self.questionName(buffer[..<count]))
        }
        return names
    }

    /// The QNAME of a DNS query (RFC 1035 4.1.2: labels after the 12-byte header), dotted.
    static func questionName(_ datagram: ArraySlice<UInt8>) -> String {
        var labels: [String] = []
        var index = datagram.startIndex + 12
        while index < datagram.endIndex, datagram[index] != 0 {
            let length = Int(datagram[index])
            let end = min(index + 1 + length, datagram.endIndex)
            labels.append(String(decoding: datagram[(index + 1)..<end], as: UTF8.self))
            index = end
        }
        return labels.joined(separator: ".")
    }
}

/// A client namespace with an uplink to a server namespace that holds the DNS servers:
/// client up0 192.0.2.2/24, default via 192.0.2.1 (the server); the server owns 198.51.100.53
/// (dnsmasq) and 198.51.100.54 (black hole) on its loopback.
struct DNSScenario {
    let client: TestNamespace
    let server: TestNamespace
    let resolvConf: URL

    static let answering = "198.51.100.53"
    static let blackHole = "198.51.100.54"

    init(nameserver: String) throws {
        client = try TestNamespace("dnsc")
        server = try TestNamespace("dnss")
        try client.ip("link add up0 type veth peer name up0s")
        try client.ip("link set up0s netns \(server.name)")
        try client.ip("addr add 192.0.2.2/24 dev up0")
        try client.ip("link set up0 up")
        try client.ip("route add default via 192.0.2.1")
        try server.ip("addr add 192.0.2.1/24 dev up0s")
        try server.ip("link set up0s up")
        try server.ip("addr add \(Self.answering)/32 dev lo")
        try server.ip("addr add \(Self.blackHole)/32 dev lo")
        resolvConf = FileManager.default.temporaryDirectory.appendingPathComponent("resolv-\(client.name).conf")
        try "nameserver \(nameserver)\n".write(to: resolvConf, atomically: true, encoding: .utf8)
    }

    func monitor(maximumConcurrentLookups: Int? = nil) throws -> ReachabilityMonitor {
        var configuration = CoreConfiguration()
        if let maximumConcurrentLookups { configuration.maximumConcurrentLookups = maximumConcurrentLookups }
        configuration.namespacePath = client.path
        configuration.sysfsRoot = "/nonexistent-sysfs"
        configuration.resolvConfPath = resolvConf.path
        return try ReachabilityMonitor(configuration: configuration)
    }
}
