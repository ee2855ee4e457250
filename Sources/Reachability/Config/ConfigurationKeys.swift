/// The sections of reachd.conf, as written in their headers.
package enum ConfigurationSection: String, CaseIterable, Sendable {
    case checks = "Checks"
    case limits = "Limits"
    case priorities = "Priorities"
    case connectivity = "Connectivity"
    /// The network's own captive-portal API.
    case portal = "Portal"
    /// What reachd-wait-online.service waits for (`reachctl wait --from-config`).
    case waitOnline = "WaitOnline"
    /// Surfaces for programs that never heard of reachd (the NetworkManager D-Bus subset).
    case compatibility = "Compatibility"
    /// The opt-in Prometheus textfile.
    case metrics = "Metrics"
    /// Passive stall detection: the switch, the rule's thresholds and the poll interval.
    case stall = "Stall"
    /// The systemd services whose own traffic is judged apart (stall verdicts per unit).
    case units = "Units"
    /// Repeats: each one is a rule.
    case interface = "Interface"
    /// Repeats: each one is a rule for one network, by its name (`NetworkID`).
    case network = "Network"

    package var name: String { rawValue }

    /// The keys this section takes, in the order `mergedText` writes them.
    package var settings: [ConfigurationSetting] {
        switch self {
        case .checks: [.defaultTimeout, .maxConcurrentLookups, .negativeCacheTime, .lookupsPerUserPerSecond, .lookupBurstPerUser]
        case .limits: [.maxWatchesPerClient, .maxWatchesPerUser, .maxWatches, .maxHostChecksPerUser, .maxHostChecks]
        case .priorities: ConfigurationSetting.priorityOrder.map { .priority($0) }
        case .connectivity: [.probeURL, .expectedStatus, .expectedBody, .probeInterval, .probeTimeout]
        case .portal: [.portalEndingLead, .portalCAFile]
        case .waitOnline: [.waitTimeout, .waitTarget, .waitKind]
        case .compatibility: [.networkManager]
        case .metrics: [.textfileDirectory, .textfileInterval]
        case .stall: [.stallDetect, .stallAfter, .stallMinSockets, .stallDNSTimeouts, .stallInterval]
        case .units: [.unitsWatch]
        case .interface: [.name, .kind, .ignore, .metered, .constrained, .probe, .rulePriority]
        case .network: [.networkID, .metered, .constrained, .probe]
        }
    }

    package var keyNames: [String] { settings.map(\.name) }

    /// The setting a key names: exactly as spelled, except that kind names in `[Priorities]` ignore case
    /// (`WiFi`, `wifi`, `WIFI`), since they are values of `InterfaceKind` as much as keys.
    package func setting(named key: String) -> ConfigurationSetting? {
        if self == .priorities {
            return InterfaceKind(rawValue: key.lowercased()).map { .priority($0) }
        }
        if self == .stall, let obsolete = [ConfigurationSetting.stallMinSegments, .stallRetransmitPercent].first(where: { $0.name == key }) {
            return obsolete  // read only to say it is ignored
        }
        return settings.first { $0.name == key }
    }
}

/// One key of reachd.conf.
package enum ConfigurationSetting: Hashable, Sendable {
    case defaultTimeout, maxConcurrentLookups, negativeCacheTime, lookupsPerUserPerSecond, lookupBurstPerUser
    case maxWatchesPerClient, maxWatchesPerUser, maxWatches, maxHostChecksPerUser, maxHostChecks
    case priority(InterfaceKind)
    case probeURL, expectedStatus, expectedBody, probeInterval, probeTimeout
    case portalEndingLead, portalCAFile
    case name, kind, ignore, metered, constrained, probe, rulePriority
    case networkID
    case waitTimeout, waitTarget, waitKind
    case networkManager
    case textfileDirectory, textfileInterval
    case stallDetect, stallAfter, stallMinSockets, stallDNSTimeouts, stallInterval
    case unitsWatch
    /// The thresholds of the delta rule stall detection used before it judged each socket's own
    /// state: still accepted, so an older reachd.conf keeps loading, and ignored with a warning.
    case stallMinSegments, stallRetransmitPercent

    /// `[Priorities]` in the order of the defaults, most preferred first.
    package static let priorityOrder: [InterfaceKind] = [.vpn, .wired, .wifi, .cellular, .bridge, .virtual, .other, .loopback]

    /// The key as `mergedText` and messages spell it.
    package var name: String {
        switch self {
        case .defaultTimeout: "DefaultTimeout"
        case .maxConcurrentLookups: "MaxConcurrentLookups"
        case .negativeCacheTime: "NegativeCacheTime"
        case .lookupsPerUserPerSecond: "LookupsPerUserPerSecond"
        case .lookupBurstPerUser: "LookupBurstPerUser"
        case .maxWatchesPerClient: "MaxWatchesPerClient"
        case .maxWatchesPerUser: "MaxWatchesPerUser"
        case .maxWatches: "MaxWatches"
        case .maxHostChecksPerUser: "MaxHostChecksPerUser"
        case .maxHostChecks: "MaxHostChecks"
        case .priority(let kind): Self.priorityKey(kind)
        case .probeURL: "URL"
        case .expectedStatus: "ExpectedStatus"
        case .expectedBody: "ExpectedBody"
        case .probeInterval: "Interval"
        case .probeTimeout: "Timeout"
        case .portalEndingLead: "EndingLead"
        case .portalCAFile: "CAFile"
        case .name: "Name"
        case .kind: "Kind"
        case .ignore: "Ignore"
        case .metered: "Metered"
        case .constrained: "Constrained"
        case .probe: "Probe"
        case .rulePriority: "Priority"
        case .networkID: "ID"
        case .waitTimeout: "Timeout"
        case .waitTarget: "Target"
        case .waitKind: "Kind"
        case .networkManager: "NetworkManager"
        case .textfileDirectory: "TextfileDirectory"
        case .textfileInterval: "TextfileInterval"
        case .stallDetect: "Detect"
        case .stallAfter: "After"
        case .stallMinSockets: "MinSockets"
        case .stallMinSegments: "MinSegments"
        case .stallRetransmitPercent: "RetransmitPercent"
        case .stallDNSTimeouts: "DNSTimeouts"
        case .stallInterval: "Interval"
        case .unitsWatch: "Watch"
        }
    }

    /// What a value looks like, for the message about an empty one.
    package var expected: String {
        switch self {
        case .defaultTimeout, .negativeCacheTime, .probeInterval, .probeTimeout, .portalEndingLead, .waitTimeout, .textfileInterval, .stallInterval,
            .stallAfter:
            "a duration such as 5s or 500ms"
        case .maxConcurrentLookups, .lookupsPerUserPerSecond, .lookupBurstPerUser, .maxWatchesPerClient, .maxWatches, .priority,
            .maxHostChecksPerUser, .maxHostChecks,
            .rulePriority, .stallMinSegments, .stallDNSTimeouts, .stallMinSockets:
            "a whole number"
        case .stallRetransmitPercent: "a percentage from 1 to 100"
        case .unitsWatch: "service names separated by spaces, such as backup.service"
        case .probeURL: "an http:// URL, such as http://nmcheck.gnome.org/check_network_status.txt"
        case .expectedStatus: "an HTTP status such as 204"
        case .expectedBody: "the text the answer's body starts with"
        case .maxWatchesPerUser: "a whole number or auto"
        case .name: "an interface name or glob such as wlan*"
        case .networkID: "a network's name, 16 hexadecimal digits as reachctl status --verbose shows it"
        case .kind: "one of " + InterfaceKind.allCases.map(\.rawValue).joined(separator: ", ")
        case .ignore, .metered, .constrained, .probe, .networkManager, .stallDetect: "yes or no"
        case .waitTarget: "an address or a host name"
        case .textfileDirectory: "an absolute directory path such as /var/lib/prometheus/node-exporter"
        case .portalCAFile: "an absolute path of a PEM file of CA certificates"
        case .waitKind: "one of " + Configuration.waitOnlineKinds.map(\.rawValue).joined(separator: ", ")
        }
    }

    private static func priorityKey(_ kind: InterfaceKind) -> String {
        switch kind {
        case .loopback: "Loopback"
        case .wired: "Wired"
        case .wifi: "WiFi"
        case .cellular: "Cellular"
        case .vpn: "VPN"
        case .bridge: "Bridge"
        case .virtual: "Virtual"
        case .other: "Other"
        }
    }
}
