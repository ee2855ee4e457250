import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// reachd's command line. Parsed by hand: the daemon links no argument parser (and so no
/// Foundation), which keeps its memory small.
struct Options {
    var bus: BusAddress = .system
    var configDirectories = Configuration.defaultDirectories
    /// The directories were named (`--config-dir`): each must exist.
    var configDirectoriesNamed = false
    var checkConfig = false
    var namespace: String?
    var sysfsRoot = "/sys"
    var rfkillDevice: String? = "/dev/rfkill"
    var resolvConf: String?
    var dhcpLeases: String? = "/run/systemd/netif/leases"
    var dhcpClientLeases: String? = "/var/lib/dhcp"
    var networkdLinks: String? = "/run/systemd/netif/links"
    var dhcpcdLeases: String? = "/var/lib/dhcpcd"
    var verbose = false
    /// The outage counters' state file; nil: none, the counters start from zero at each start.
    var outageClock: String? = Options.defaultOutageClock()

    static let usage = """
        Usage: reachd [OPTIONS]

        Watch the kernel's links, addresses and routes, derive reachability, and publish it on
        D-Bus as org.reachd.Reachability1 (see reachd(8), reachctl(1)).

        Options:
          --system               serve on the system bus (the default)
          --user                 serve on the user's session bus
          --bus-address ADDRESS  serve on the bus at ADDRESS (unix:path=/run/...), for tests
          --config-dir DIR       read DIR/reachd.conf and DIR/reachd.conf.d/*.conf instead of
                                 /etc/reachd (repeatable: searched in the order given, earlier
                                 directories take precedence; each must exist; reachd.conf(5))
          --check-config         validate the configuration, print the merged result, and exit:
                                 0 valid, 2 invalid (every error as FILE:LINE: [Section] Key: ...)
          --netns NAME|PATH      watch a network namespace (`ip netns` NAME or a path)
          --resolv-conf PATH     read nameservers from PATH instead of /etc/resolv.conf
          --dhcp-leases DIR      read networkd's DHCP leases from DIR instead of
                                 /run/systemd/netif/leases ("none": read none), for tests
          --dhcp-client-leases DIR
                                 read dhclient's leases (captive-portal URIs) from DIR instead
                                 of /var/lib/dhcp ("none": read none), for tests
          --networkd-links DIR   read networkd's link state (captive-portal URIs) from DIR
                                 instead of /run/systemd/netif/links ("none": read none), for tests
          --dhcpcd-leases DIR    read dhcpcd's leases (captive-portal URIs) from DIR instead of
                                 /var/lib/dhcpcd ("none": read none), for tests
          --rfkill-device PATH   follow radio switches on PATH instead of /dev/rfkill ("none":
                                 read them from sysfs on each link event), for tests
          --outage-clock PATH    keep the outage counters across restarts in PATH ("none": keep
                                 them in memory only); by default outage-clock in the unit's
                                 StateDirectory= ($STATE_DIRECTORY, /var/lib/reachd), none
                                 when started without one
          --verbose              log debug lines too
          --help                 show this help
          --version              show the version

        Signals: SIGHUP reloads the configuration (a bad one is refused and the old one kept);
        SIGTERM and SIGINT stop. Exit status: 0 stopped cleanly, 1 lost the bus or the name
        (systemd restarts it), 2 bad usage or configuration (an unknown option, a missing value,
        an address that is no D-Bus address, a --config-dir or --netns that does not exist; the
        unit's RestartPreventExitStatus=2 does not restart it).
        """

    static let version = "reachd \(BuildInfo.version)"

    /// `outage-clock` in the first directory of `$STATE_DIRECTORY` (systemd sets it from
    /// StateDirectory=, and makes it writable under ProtectSystem=strict); nil without one: a
    /// reachd started by hand or by a test writes nothing outside what it was told.
    static func defaultOutageClock() -> String? {
        guard let value = getenv("STATE_DIRECTORY"), let first = String(cString: value).split(separator: ":").first,
            first.hasPrefix("/")
        else { return nil }
        return first + "/outage-clock"
    }

    enum Parsed {
        case run(Options)
        case exit(Int32)
    }

    /// The options that name a file or directory to read, or `none`: not read at all.
    static let pathsOrNone: [String: WritableKeyPath<Options, String?> & Sendable] = [
        "--rfkill-device": \.rfkillDevice, "--dhcp-leases": \.dhcpLeases, "--dhcp-client-leases": \.dhcpClientLeases,
        "--networkd-links": \.networkdLinks, "--dhcpcd-leases": \.dhcpcdLeases,
    ]

    static func parse(_ arguments: [String]) -> Parsed {
        var options = Options()
        var configDirectories: [String] = []
        var index = 0
        func value(_ flag: String) -> String? {
            index += 1
            guard index < arguments.count, !arguments[index].isEmpty else {
                Log.error("\(flag) needs a value; see reachd --help")
                return nil
            }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--system": options.bus = .system
            case "--user": options.bus = .user
            case "--bus-address":
                guard let address = value(argument) else { return .exit(2) }
                if let problem = BusAddressSyntax.problem(in: address) {
                    Log.error("--bus-address '\(address)' is not a D-Bus address: \(problem); give TRANSPORT:KEY=VALUE, like \(BusAddressSyntax.example)")
                    return .exit(2)
                }
                options.bus = .address(address)
            case "--config-dir":
                guard let directory = value(argument) else { return .exit(2) }
                configDirectories.append(directory)
            case "--check-config": options.checkConfig = true
            case "--netns":
                guard let namespace = value(argument) else { return .exit(2) }
                let path = NetworkNamespace.path(forName: namespace)
                // A name that names nothing is a mistake in the command line, not a lost bus:
                // exit 2, which the unit does not restart on.
                guard access(path, F_OK) == 0 else {
                    Log.error("--netns '\(namespace)': no such network namespace (\(path))")
                    return .exit(2)
                }
                options.namespace = path
            case "--sysfs-root":
                guard let root = value(argument) else { return .exit(2) }
                options.sysfsRoot = root
            case _ where Self.pathsOrNone[argument] != nil:
                guard let path = value(argument), let option = Self.pathsOrNone[argument] else { return .exit(2) }
                options[keyPath: option] = path == "none" ? nil : path
            case "--resolv-conf":
                guard let path = value(argument) else { return .exit(2) }
                options.resolvConf = path
            case "--outage-clock":
                guard let path = value(argument) else { return .exit(2) }
                guard path == "none" || path.hasPrefix("/") else {
                    Log.error("--outage-clock '\(path)': give an absolute path, or none")
                    return .exit(2)
                }
                options.outageClock = path == "none" ? nil : path
            case "--verbose": options.verbose = true
            case "--help", "-h":
                print(usage)
                return .exit(0)
            case "--version":
                print(version)
                return .exit(0)
            default:
                Log.error("unknown option '\(argument)'; see reachd --help")
                return .exit(2)
            }
            index += 1
        }
        if !configDirectories.isEmpty { (options.configDirectories, options.configDirectoriesNamed) = (configDirectories, true) }
        return .run(options)
    }
}
