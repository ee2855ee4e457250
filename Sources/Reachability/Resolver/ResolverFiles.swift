/// The files DNS is configured by (resolv.conf, systemd-resolved's upstream list, /etc/hosts),
/// each read without trust (`UntrustedFile`) and once per version (`FileIdentity`: one stat per
/// look, which never blocks), shared by the lookups and the nameserver fact so that each fault
/// is said once. A file that cannot be taken (a FIFO, a device, past its size limit, unreadable)
/// is reported once through `warn`, naming the file and what it is, and the last version read
/// well stays in use until the file is fixed, when it is read again. Loop-thread only.
package final class ResolverFiles {
    package let resolvConfPath: String
    package let upstreamPath: String?
    package let hostsPath: String
    /// Hears of each fault once (and again only after the file was read well in between).
    package var warn: (String) -> Void

    private var resolvConf: FollowedFile<ResolverConfiguration>
    private var upstream: FollowedFile<ResolverConfiguration>?
    private var hosts: FollowedFile<HostsFile>

    package init(resolvConfPath: String, upstreamPath: String? = nil, hostsPath: String = "/etc/hosts", warn: @escaping (String) -> Void = { _ in }) {
        self.resolvConfPath = resolvConfPath
        self.upstreamPath = upstreamPath
        self.hostsPath = hostsPath
        self.warn = warn
        resolvConf = Self.followed(resolvConfPath)
        upstream = upstreamPath.map(Self.followed)
        hosts = FollowedFile(path: hostsPath, limit: HostsFile.fileLimit, parse: HostsFile.init(parsing:))
    }

    private static func followed(_ path: String) -> FollowedFile<ResolverConfiguration> {
        FollowedFile(path: path, limit: ResolverConfiguration.fileLimit, parse: ResolverConfiguration.init(parsing:)) { read in
            guard read.droppedNameservers > 0 else { return nil }
            return "\(path): \(read.droppedNameservers) nameserver line(s) ignored, past the first "
                + "\(ResolverConfiguration.maximumNameservers) (glibc asks no more) or not an address"
        }
    }

    /// resolv.conf now: an absent file is an empty one (no nameserver); nil when it was never
    /// read well (it is a FIFO since reachd started, say).
    package func resolverConfiguration() -> ResolverConfiguration? {
        resolvConf.current(report: warn)
    }

    /// resolved's upstream list now; nil when there is none (or it was never read well).
    package func upstreamConfiguration() -> ResolverConfiguration? {
        upstream?.current(report: warn) ?? nil
    }

    /// What /etc/hosts gives `name`; empty when nothing (or the file cannot be read).
    package func hostsAddresses(_ name: String) -> [IPAddress] {
        hosts.current(report: warn)?.addresses(of: name) ?? []
    }

    /// What is wrong with resolv.conf's current version, if anything.
    package var resolvConfFault: String? { resolvConf.fault }
}

/// One file followed by version: the value of the last version read well, and the fault of the
/// current one, if any.
package struct FollowedFile<Value> {
    package let path: String
    package let limit: Int
    package let parse: ([UInt8]) -> Value
    /// What is worth a line about a version read well (nameservers dropped), if anything.
    package let note: (Value) -> String?
    private var looked = false
    private var identity: FileIdentity?
    private var value: Value?
    /// The current version's refusal, said once.
    package private(set) var fault: String?

    package init(path: String, limit: Int, parse: @escaping ([UInt8]) -> Value, note: @escaping (Value) -> String? = { _ in nil }) {
        self.path = path
        self.limit = limit
        self.parse = parse
        self.note = note
    }

    /// The value of the last version read well, reading the file first when it changed (one
    /// stat otherwise); `report` hears of a refusal or a note, once per version.
    package mutating func current(report: (String) -> Void) -> Value? {
        let now = FileIdentity(path: path)
        // A missing file is looked at each time (an open that fails at once): nothing to cache.
        if looked, now != nil, now == identity { return value }
        looked = true
        identity = now
        switch UntrustedFile.contents(of: path, limit: limit) {
        case let .success(bytes):
            let read = parse(bytes)
            value = read
            fault = nil
            if let text = note(read) { report(text) }
        case .failure(.missing):
            value = parse([])
            fault = nil
        case let .failure(refusal):
            let text = "\(refusal): ignored, "
                + (value == nil ? "nothing read from it is in use" : "what was last read from it stays in use") + " until it is fixed"
            // A FIFO written to changes its times, so the same fault may be met again: said once.
            if fault != text { report(text) }
            fault = text
        }
        return value
    }
}
