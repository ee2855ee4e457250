extension Configuration {
    /// The effective configuration written as one reachd.conf: a header comment naming the files it was
    /// merged from, then every setting with its value (defaults included) and every rule in order.
    /// `reachd --check-config` prints it. Parsing it gives back this configuration (except `sources`,
    /// which only the loader sets).
    public var mergedText: String {
        var lines = ["# The configuration reachd uses, merged from these files in this order (later ones win):"]
        if sources.isEmpty {
            lines.append("#   (none: the built-in defaults)")
        } else {
            lines += sources.map { "#   \($0)" }
        }
        for section in [ConfigurationSection.checks, .limits, .priorities] {
            lines.append("")
            lines.append("[\(section.name)]")
            lines += section.settings.map { "\($0.name)=\(text(of: $0))" }
        }
        lines.append("")
        lines.append("[\(ConfigurationSection.connectivity.name)]")
        if connectivity.isEnabled {
            lines += ConfigurationSection.connectivity.settings.compactMap { setting in
                let value = text(of: setting)
                return value.isEmpty ? nil : "\(setting.name)=\(value)"
            }
        } else {
            // Off: no URL. The other keys only matter once one is set.
            lines.append("# URL= not set: the connectivity probe is off")
        }
        lines.append("")
        lines.append("[\(ConfigurationSection.waitOnline.name)]")
        lines.append("\(ConfigurationSetting.waitTimeout.name)=\(DurationText.format(waitOnlineTimeout))")
        if let waitOnlineTarget { lines.append("\(ConfigurationSetting.waitTarget.name)=\(waitOnlineTarget)") }
        if let waitOnlineKind { lines.append("\(ConfigurationSetting.waitKind.name)=\(waitOnlineKind.rawValue)") }
        lines.append("")
        lines.append("[\(ConfigurationSection.compatibility.name)]")
        lines.append("\(ConfigurationSetting.networkManager.name)=\(Self.text(networkManagerCompatibility))")
        lines.append("")
        lines.append("[\(ConfigurationSection.metrics.name)]")
        if let directory = metrics.textfileDirectory {
            lines.append("\(ConfigurationSetting.textfileDirectory.name)=\(directory)")
        } else {
            lines.append("# TextfileDirectory= not set: no node_exporter textfile")
        }
        lines.append("\(ConfigurationSetting.textfileInterval.name)=\(DurationText.format(metrics.textfileInterval))")
        for rule in rules {
            lines.append("")
            lines.append("[\(ConfigurationSection.interface.name)]")
            lines.append("\(ConfigurationSetting.name.name)=\(rule.pattern)")
            if let kind = rule.kind { lines.append("\(ConfigurationSetting.kind.name)=\(kind.rawValue)") }
            if let ignore = rule.ignore { lines.append("\(ConfigurationSetting.ignore.name)=\(Self.text(ignore))") }
            if let metered = rule.metered { lines.append("\(ConfigurationSetting.metered.name)=\(Self.text(metered))") }
            if let probe = rule.probe { lines.append("\(ConfigurationSetting.probe.name)=\(Self.text(probe))") }
            if let priority = rule.priority { lines.append("\(ConfigurationSetting.rulePriority.name)=\(priority)") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A scalar setting's value as the file spells it.
    private func text(of setting: ConfigurationSetting) -> String {
        switch setting {
        case .defaultTimeout: DurationText.format(defaultTimeout)
        case .maxConcurrentLookups: "\(maxConcurrentLookups)"
        case .negativeCacheTime: DurationText.format(negativeCacheTime)
        case .maxWatchesPerClient: "\(maxWatchesPerClient)"
        case .maxWatchesPerUser: maxWatchesPerUserSetting.map { "\($0)" } ?? "auto"
        case .maxWatches: "\(maxWatches)"
        case .priority(let kind): "\(priorities[kind] ?? kind.defaultPriority)"
        case .probeURL: connectivity.url?.description ?? ""
        case .expectedStatus: "\(connectivity.expectation.status)"
        case .expectedBody: connectivity.expectation.body
        case .probeInterval: DurationText.format(connectivity.interval)
        case .probeTimeout: DurationText.format(connectivity.timeout)
        case .name, .kind, .ignore, .metered, .probe, .rulePriority: ""  // rule keys are written per rule
        case .waitTimeout, .waitTarget, .waitKind, .networkManager, .textfileDirectory, .textfileInterval: ""  // written by mergedText itself
        }
    }

    private static func text(_ flag: Bool) -> String { flag ? "yes" : "no" }
}
