import CNetlink
#if canImport(Glibc)
import Glibc
#endif

/// The kernel's side of a unit's answer (`UnitPolicy` judges it): which namespace its traffic
/// leaves from, whose uid it is routed as, and the routes of a namespace of its own. Every read
/// is of the kernel's own files (procfs, nsfs) or /etc/passwd through `UntrustedFile`, and a
/// namespace is entered only by the throwaway thread that opens a socket in it
/// (`NetworkNamespace`), whose lookups then answer at once: nothing here waits on anyone.
package enum UnitRoutes {
    /// What a unit's check of the internet ("") is judged by: the host's own destinations.
    package static var internetDestinations: [IPAddress] { KernelSource.internetDestinations.map(\.address) }

    /// Where the unit's packets are routed: PrivateNetwork='s loopback (systemd gives such a
    /// unit a namespace of its own with nothing else), NetworkNamespacePath='s namespace, else the
    /// namespace of its running main process (JoinsNamespaceOf=), or the host's.
    package static func namespace(of sandbox: UnitSandbox) -> UnitSandbox.Namespace {
        if !sandbox.namespacePath.isEmpty { return .path(sandbox.namespacePath) }
        if sandbox.privateNetwork { return .loopbackOnly }
        guard sandbox.mainPID != 0 else { return .host }
        let theirs = "/proc/\(sandbox.mainPID)/ns/net"
        var ours = stat()
        var process = stat()
        guard stat("/proc/self/ns/net", &ours) == 0, stat(theirs, &process) == 0 else { return .host }
        return ours.st_ino == process.st_ino && ours.st_dev == process.st_dev ? .host : .path(theirs)
    }

    /// Whether systemd can enforce a unit's IP address filter: it attaches a BPF program to the
    /// unit's cgroup, which needs the unified hierarchy (cgroup v2 at /sys/fs/cgroup). On the
    /// legacy one, and on a hybrid one as the package test's container boots (a cgroup v2 at
    /// /sys/fs/cgroup/unified beside v1), systemd was seen to ignore the settings.
    package static func addressFilterEnforced(sysfsRoot: String = "/sys") -> Bool {
        isCgroup2(sysfsRoot + "/fs/cgroup")
    }

    /// Where the unified cgroup hierarchy is mounted, whose paths systemd's `ControlGroup`
    /// names: /sys/fs/cgroup, or on a hybrid system /sys/fs/cgroup/unified; nil on neither.
    package static func unifiedHierarchy(sysfsRoot: String = "/sys") -> String? {
        [sysfsRoot + "/fs/cgroup", sysfsRoot + "/fs/cgroup/unified"].first(where: isCgroup2)
    }

    private static func isCgroup2(_ path: String) -> Bool {
        var info = statfs()
        return statfs(path, &info) == 0 && UInt(bitPattern: Int(info.f_type)) == 0x6367_7270  // CGROUP2_SUPER_MAGIC
    }

    /// The real uid of process `pid` (`Uid:` of /proc/PID/status); nil when it is gone.
    package static func uid(ofProcess pid: UInt32) -> UInt32? {
        guard case let .success(bytes) = UntrustedFile.contents(of: "/proc/\(pid)/status", limit: 16 << 10) else { return nil }
        let line = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("Uid:") }
        return line.flatMap { $0.dropFirst(4).split(whereSeparator: { $0 == "\t" || $0 == " " }).first }.flatMap { UInt32($0) }
    }

    /// `User=`'s uid: a number as written, else the name's entry in /etc/passwd (never NSS,
    /// which may ask the network); nil when it has none.
    package static func uid(ofUser name: String) -> UInt32? {
        if let uid = UInt32(name) { return uid }
        guard case let .success(bytes) = UntrustedFile.contents(of: "/etc/passwd", limit: 4 << 20) else { return nil }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            if fields.count > 2, fields[0] == name { return UInt32(fields[2]) }
        }
        return nil
    }

    /// The answer for each address in the namespace at `path`, routed as `uid`: one socket
    /// opened there, one route lookup and one link lookup per address. Needs CAP_SYS_ADMIN
    /// (setns): reachd as packaged has none, and says so.
    package static func answers(_ addresses: [IPAddress], target: String, in path: String, uid: UInt32?) -> Result<[CheckResult], SystemError> {
        do throws(SystemError) {
            let query = try RouteQuery(namespacePath: path)
            var results: [CheckResult] = []
            for address in addresses {
                let lookup = try query.lookup(address, uid: uid)
                let link = try lookup.route(family: address.family)?.nextHops.first?.interfaceIndex.flatMap { index throws(SystemError) in try query.link(index) }
                results.append(UnitPolicy.namespaceAnswer(lookup, link: link, for: address, target: target))
            }
            return .success(results)
        } catch {
            return .failure(error)
        }
    }
}
