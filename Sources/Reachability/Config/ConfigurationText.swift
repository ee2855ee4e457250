extension Configuration {
    /// The effective configuration written as one reachd.conf: a header comment naming the files it was
    /// merged from, then every setting with its value (defaults included) and every rule in order.
    /// `reachd --check-config` prints it. Parsing it gives back this configuration (except `sources`,
    /// which only the loader sets).
    package var mergedText: String {
        var lines = ["# The configuration reachd uses, merged from these files in this order (later ones win):"]
        if sources.isEmpty {
            lines.append("#   (none: the built-in defaults)")
        } else {
            lines += sources.map { "#   \($0)" }
        }
        for section in ConfigurationSection.allCases where section != .interface && section != .network {
            lines.append("")
            lines.append("[\(section.name)]")
            if section == .connectivity, !connectivity.isEnabled {
                // Off: no URL. The other keys only matter once one is set.
                lines.append("# URL= not set: the connectivity probe is off")
                continue
            }
            if section == .units, watchedUnits.isEmpty {
                lines.append("# Watch= not set: no unit's traffic is judged apart")
            }
            if section == .metrics, metrics.textfileDirectory == nil {
                lines.append("# TextfileDirectory= not set: no node_exporter textfile")
            }
            lines += section.settings.compactMap { setting in text(of: setting).map { "\(setting.name)=\($0)" } }
        }
        for rule in rules {
            lines.append("")
            lines.append("[\(ConfigurationSection.interface.name)]")
            lines += ConfigurationSection.interface.settings.compactMap { setting in
                Self.text(of: setting, in: rule).map { "\(setting.name)=\($0)" }
            }
        }
        for network in networks {
            lines.append("")
            lines.append("[\(ConfigurationSection.network.name)]")
            lines.append("ID=\(network.id)")
            for (setting, value) in [(ConfigurationSetting.metered, network.metered), (.constrained, network.constrained), (.probe, network.probe)] {
                if let value { lines.append("\(setting.name)=\(Self.text(value))") }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A setting's value as the file spells it; nil leaves the key out (unset, or a rule's key).
    private func text(of setting: ConfigurationSetting) -> String? {
        switch setting {
        case .defaultTimeout: DurationText.format(defaultTimeout)
        case .maxConcurrentLookups: "\(maxConcurrentLookups)"
        case .negativeCacheTime: DurationText.format(negativeCacheTime)
        case .lookupsPerUserPerSecond: "\(lookupsPerUserPerSecond)"
        case .lookupBurstPerUser: "\(lookupBurstPerUser)"
        case .maxWatchesPerClient: "\(maxWatchesPerClient)"
        case .maxWatchesPerUser: maxWatchesPerUserSetting.map { "\($0)" } ?? "auto"
        case .maxWatches: "\(maxWatches)"
        case .maxHostChecks: "\(maxHostChecks)"
        case .maxHostChecksPerUser: "\(maxHostChecksPerUser)"
        case .priority(let kind): "\(priorities[kind] ?? kind.defaultPriority)"
        case .probeURL: connectivity.url?.description
        case .expectedStatus: "\(connectivity.expectation.status)"
        case .expectedBody: connectivity.expectation.body.isEmpty ? nil : connectivity.expectation.body
        case .probeInterval: DurationText.format(connectivity.interval)
        case .probeTimeout: DurationText.format(connectivity.timeout)
        case .portalEndingLead: DurationText.format(portal.endingLead)
        case .portalCAFile: portal.caFile
        case .waitTimeout: DurationText.format(waitOnlineTimeout)
        case .waitTarget: waitOnlineTarget
        case .waitKind: waitOnlineKind?.rawValue
        case .networkManager: Self.text(networkManagerCompatibility)
        case .textfileDirectory: metrics.textfileDirectory
        case .textfileInterval: DurationText.format(metrics.textfileInterval)
        case .stallDetect: Self.text(stallDetection)
        case .stallAfter: DurationText.format(stall.window)
        case .stallMinSockets: "\(stall.minimumSockets)"
        case .stallMinSegments, .stallRetransmitPercent: nil
        case .stallDNSTimeouts: "\(stall.dnsTimeouts)"
        case .stallInterval: DurationText.format(stall.pollInterval)
        case .unitsWatch: watchedUnits.isEmpty ? nil : watchedUnits.joined(separator: " ")
        case .name, .kind, .ignore, .metered, .constrained, .probe, .rulePriority, .networkID: nil  // written per rule
        }
    }

    /// A rule's value for `setting`; nil when the rule leaves it unset.
    private static func text(of setting: ConfigurationSetting, in rule: InterfaceRule) -> String? {
        switch setting {
        case .name: rule.pattern
        case .kind: rule.kind?.rawValue
        case .ignore: rule.ignore.map(text)
        case .metered: rule.metered.map(text)
        case .constrained: rule.constrained.map(text)
        case .probe: rule.probe.map(text)
        case .rulePriority: rule.priority.map { "\($0)" }
        default: nil
        }
    }

    private static func text(_ flag: Bool) -> String { flag ? "yes" : "no" }
}
