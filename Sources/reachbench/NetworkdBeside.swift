#if canImport(Glibc)
import Glibc
#endif

/// systemd-networkd, started beside reachd and watching the same namespace, so that the two idle
/// sizes come from one run on one machine (issue 23's budget: the packaged reachd no larger).
/// It manages nothing (no .network files); it enumerates the links and waits, as reachd does.
enum NetworkdBeside {
    static let candidates = ["/lib/systemd/systemd-networkd", "/usr/lib/systemd/systemd-networkd"]

    /// nil (with a note) where networkd is not installed or does not start.
    static func start(namespace: String, log: String) -> ChildProcess? {
        guard let networkd = findExecutable(candidates),
            let ip = findExecutable(["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"])
        else {
            note("reachbench: bus: systemd-networkd not installed, so not measured beside reachd")
            return nil
        }
        // `ip netns exec` gives it a mount namespace of its own: a tmpfs on /run/systemd there keeps
        // its state files off the host's (it makes /run/systemd/netif itself, for its own user).
        // It runs as systemd-network, which may not connect to the private bus (root's), so it
        // gets a bus address where no bus is yet: it waits for one to appear there, as it does at
        // boot. Without a bus connection its figure is, if anything, a little smaller.
        let script = "mount -t tmpfs tmpfs /run/systemd && DBUS_SYSTEM_BUS_ADDRESS='unix:path=/run/systemd/no-bus'"
            + " exec \(networkd)"
        guard let process = try? ChildProcess(ip, ["netns", "exec", namespace, "/bin/sh", "-c", script], logFile: log) else {
            note("reachbench: bus: systemd-networkd did not start (see \(log))")
            return nil
        }
        return process
    }
}
