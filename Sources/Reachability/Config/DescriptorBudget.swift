#if canImport(Glibc)
import Glibc
#endif

/// What reachd spends its file descriptors on, against the soft limit it runs under
/// (`RLIMIT_NOFILE`: `LimitNOFILE=` in reachd.service, 1024 where a unit sets none). Nothing a
/// caller holds takes one: the bus connection declines descriptors riding on calls
/// (`BusConnection`), and a held call, a watch or a waiting lookup holds none. What grows is DNS:
/// a running lookup holds up to a UDP and a TCP socket to each of resolv.conf's nameservers. So
/// the lookups that run at once are kept to what fits beside the fixed ones, and no caller can
/// take reachd to its limit, however it is configured.
package enum DescriptorBudget {
    /// Everything but lookups, with room to spare: the loop, the bus, two netlink sockets, the
    /// signalfd, inotify, wake-up pipes, the metrics listeners and their 4 connections, the
    /// probe's and the nameserver check's sockets, sock_diag. reachd holds 18 idle, about 40 at
    /// the most seen.
    package static let fixed = 128
    /// A lookup's sockets at most.
    package static let perLookup = 2 * ResolverConfiguration.maximumNameservers

    /// The descriptors `lookups` running at once need, the fixed ones included.
    package static func needed(lookups: Int) -> Int { fixed + lookups * perLookup }

    /// The lookups that fit under `limit` descriptors, at most `configured`, at least one.
    package static func lookups(_ configured: Int, limit: Int) -> Int {
        max(1, min(configured, (limit - fixed) / perLookup))
    }

    /// The process's soft limit on open descriptors now.
    package static var softLimit: Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return Int(clamping: limit.rlim_cur)  // RLIM_INFINITY is the largest rlim_t: Int.max
    }
}
