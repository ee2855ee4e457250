/// What the resolver takes from the files DNS is configured by (`ResolverFiles`): the
/// nameservers and settings of each lookup, and /etc/hosts.
extension HostResolver {
    /// The resolv.conf this resolver reads.
    package var resolvConfPath: String { files.resolvConfPath }

    /// The system's resolv.conf, what c-ares reads by default.
    package static let systemResolvConfPath = "/etc/resolv.conf"

    /// The nameservers a lookup started now would ask, in order, for the "can any nameserver be
    /// reached at all" pre-check: resolv.conf's (read once per version of the file), 127.0.0.1
    /// when it names none (as glibc and c-ares do), none when it was never read well.
    package func nameservers() -> [IPAddress] {
        (try? lookupSettings().get())?.servers ?? []
    }

    /// What /etc/hosts says about `name`, without any query: for answering when no nameserver
    /// is reachable.
    package func hostsFileAddresses(_ name: String) -> [IPAddress] {
        files.hostsAddresses(name)
    }

    /// The servers and settings for a lookup now, or why there are none.
    package func lookupSettings() -> Result<(servers: [IPAddress], configuration: ResolverConfiguration), ResolverError> {
        guard let configuration = files.resolverConfiguration() else {
            let fault = files.resolvConfFault ?? "\(files.resolvConfPath) could not be read"
            return .failure(ResolverError(message: "no nameserver known: \(fault)"))
        }
        let servers = configuration.nameservers.isEmpty ? [IPAddress.v4(0x7F00_0001)] : configuration.nameservers
        return .success((servers, configuration))
    }
}
