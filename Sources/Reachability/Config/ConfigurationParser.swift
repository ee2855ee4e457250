extension Configuration {
    /// Applies one file's text on top of `configuration` and returns every problem found, in line order.
    ///
    /// The syntax is systemd.syntax(7): `[Section]` headers, `Key=Value` assignments with the whitespace
    /// around key and value trimmed, blank lines, and comment lines starting with `#` or `;` (also between
    /// continued lines). A line ending in `\` continues on the next one, the `\` becoming a space; `\\` at
    /// the end is not a continuation. A UTF-8 byte order mark at the start is skipped. Section and key
    /// names are case-sensitive, except the kind names in `[Priorities]`.
    ///
    /// Scalar keys: the last assignment wins, within a file and across files, as in systemd. An empty value
    /// is an error (remove the line to keep the default). Each `[Interface]` section is one rule; rules
    /// accumulate in order, and a rule whose `Name=` equals that of a rule from an earlier file replaces it
    /// in place (a section with only `Name=` so switches an earlier rule off). Within one file a second
    /// section with the same `Name=`, or a key set twice in one section, is an error.
    ///
    /// Pure: no I/O, `file` only names the text in errors; `sources` is left alone (the loader records
    /// the files it reads). Values that parse are applied even when others fail; a caller that gets any
    /// error rejects the whole configuration.
    package static func parse(_ text: String, file: String, into configuration: inout Configuration)
        -> [ConfigurationError]
    {
        var parser = ConfigurationParser(file: file, configuration: configuration)
        parser.parse(Array(text.utf8))
        configuration = parser.configuration
        return parser.errors
    }
}

/// One file's parse: the line splitting of systemd.syntax(7), then one logical line at a time.
package struct ConfigurationParser {
    package let file: String
    package var configuration: Configuration
    private(set) var errors: [ConfigurationError] = []

    /// Where the lines being read go.
    private var section: ConfigurationSection?
    /// Whether the current section's lines are being dropped (an unknown or malformed header, reported once).
    private var skippingSection = false
    /// The `[Interface]` section being read, completed at the next header or the end.
    private var pendingRule: PendingRule?
    /// The `Name=` of every rule this file gave, with its section's line, to refuse a second one.
    private var rulesInThisFile: [String: Int] = [:]
    private var reportedTooManyRules = false
    /// The `ID=` of every network rule this file gave, with its section's line.
    private var networksInThisFile: [String: Int] = [:]

    package init(file: String, configuration: Configuration) {
        self.file = file
        self.configuration = configuration
    }

    // MARK: Lines

    package mutating func parse(_ bytes: [UInt8]) {
        guard bytes.count <= Configuration.maximumFileBytes else {
            fail(line: nil, ConfigurationParser.tooLargeMessage(bytes.count))
            return
        }
        var text = bytes[...]
        if text.starts(with: [0xEF, 0xBB, 0xBF]) { text = text.dropFirst(3) }
        var lines = text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        // A final newline ends the last line; it does not start another.
        if lines.last?.isEmpty == true { lines.removeLast() }

        var continuation: (text: [UInt8], line: Int)?
        for (index, physical) in lines.enumerated() {
            let number = index + 1
            guard number <= Configuration.maximumLines else {
                fail(line: number, "more than \(Configuration.maximumLines) lines; the file is refused")
                return
            }
            let content = Self.trimmed(physical)
            // Comment lines are skipped even between continued lines, as systemd does.
            if let first = content.first, first == UInt8(ascii: "#") || first == UInt8(ascii: ";") { continue }
            var logical = continuation.map { $0.text + content } ?? Array(content)
            let start = continuation?.line ?? number
            if Self.endsInContinuation(logical) {
                logical[logical.count - 1] = UInt8(ascii: " ")
                continuation = (logical, start)
                continue
            }
            continuation = nil
            handle(logical[...], line: start)
        }
        // A continuation at the end of the file ends there.
        if let continuation { handle(continuation.text[...], line: continuation.line) }
        finishSection()
    }

    /// Whether the text ends in a `\` that is not itself escaped (`\\`).
    private static func endsInContinuation(_ text: [UInt8]) -> Bool {
        var escaped = false
        for byte in text {
            escaped = escaped ? false : byte == UInt8(ascii: "\\")
        }
        return escaped
    }

    /// systemd's WHITESPACE: space, tab, newline, carriage return.
    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = bytes
        while let first = slice.first, isWhitespace(first) { slice.removeFirst() }
        while let last = slice.last, isWhitespace(last) { slice.removeLast() }
        return slice
    }

    private static func string(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    /// One logical line: a header, an assignment, or blank.
    private mutating func handle(_ raw: ArraySlice<UInt8>, line: Int) {
        let content = Self.trimmed(raw)
        guard let first = content.first else { return }
        if first == UInt8(ascii: "[") {
            header(Self.string(content), line: line)
            return
        }
        guard let equals = content.firstIndex(of: UInt8(ascii: "=")) else {
            fail(line: line, section: section?.name, "line without '=': '\(Self.string(content))'; expected Key=Value")
            return
        }
        let key = Self.string(Self.trimmed(content[..<equals]))
        let value = Self.string(Self.trimmed(content[(equals + 1)...]))
        guard let section else {
            if !skippingSection {
                fail(line: line, key: key.isEmpty ? nil : key,
                     "assignment outside any section; put it below a section header such as [Checks]")
            }
            return
        }
        guard !key.isEmpty else {
            fail(line: line, section: section.name, "line '\(Self.string(content))' has no key before '='")
            return
        }
        assign(key: key, value: value, in: section, line: line)
    }

    // MARK: Sections

    private mutating func header(_ text: String, line: Int) {
        finishSection()
        section = nil
        skippingSection = true
        guard text.count >= 2, text.hasSuffix("]") else {
            fail(line: line, "invalid section header '\(text)'; expected [Name]")
            return
        }
        let name = String(text.dropFirst().dropLast())
        guard let found = ConfigurationSection(rawValue: name) else {
            let names = ConfigurationSection.allCases.map(\.name)
            let hint = Suggestion.nearest(to: name, among: names).map { "did you mean [\($0)]?" }
                ?? "valid sections are " + names.map { "[\($0)]" }.joined(separator: ", ")
            fail(line: line, "unknown section [\(name)]; \(hint)")
            return
        }
        section = found
        skippingSection = false
        if found == .interface { pendingRule = PendingRule(line: line) }
        if found == .network { pendingRule = PendingRule(line: line, network: NetworkRule(id: "")) }
    }

    /// Completes an `[Interface]` or `[Network]` section into a rule; nothing for the others.
    private mutating func finishSection() {
        guard let rule = pendingRule else { return }
        pendingRule = nil
        guard !rule.failed else { return }  // already reported; a half rule would match the wrong links
        if let network = rule.network { return finishNetwork(network, line: rule.line) }
        let made = rule.rule, pattern = made.pattern
        guard !pattern.isEmpty else {  // Name= never accepts an empty pattern
            fail(line: rule.line, section: ConfigurationSection.interface.name,
                 "section without Name=; every rule needs the interface names it applies to")
            return
        }
        if let earlier = rulesInThisFile[pattern] {
            fail(line: rule.line, section: ConfigurationSection.interface.name, key: "Name",
                 "a rule for '\(pattern)' already starts at line \(earlier) of this file; merge the two sections")
            return
        }
        rulesInThisFile[pattern] = rule.line
        if let index = configuration.rules.firstIndex(where: { $0.pattern == pattern }) {
            configuration.rules[index] = made  // a drop-in overriding a rule of an earlier file
        } else if configuration.rules.count < Configuration.maximumRules {
            configuration.rules.append(made)
        } else if !reportedTooManyRules {
            reportedTooManyRules = true
            fail(line: rule.line, section: ConfigurationSection.interface.name,
                 "more than \(Configuration.maximumRules) rules; merge rules with globs")
        }
    }

    /// A `[Network]` rule joins the others, replacing one of an earlier file for the same network.
    private mutating func finishNetwork(_ network: NetworkRule, line: Int) {
        let section = ConfigurationSection.network.name
        guard !network.id.isEmpty else {
            return fail(line: line, section: section, "section without ID=; every [Network] rule needs the network's name")
        }
        if let earlier = networksInThisFile[network.id] {
            return fail(line: line, section: section, key: "ID",
                        "a rule for network \(network.id) already starts at line \(earlier) of this file; merge the two sections")
        }
        networksInThisFile[network.id] = line
        if let index = configuration.networks.firstIndex(where: { $0.id == network.id }) {
            configuration.networks[index] = network
        } else if configuration.networks.count < Configuration.maximumRules {
            configuration.networks.append(network)
        } else {
            fail(line: line, section: section, "more than \(Configuration.maximumRules) network rules")
        }
    }

    // MARK: Assignments

    private mutating func assign(key: String, value: String, in section: ConfigurationSection, line: Int) {
        guard let setting = section.setting(named: key) else {
            let names = section.keyNames
            let hint = Suggestion.nearest(to: key, among: names).map { "did you mean '\($0)'?" }
                ?? "valid keys are " + names.joined(separator: ", ")
            fail(line: line, section: section.name, key: key, "unknown key; \(hint)")
            pendingRule?.failed = true
            return
        }
        if section == .interface || section == .network, let first = pendingRule?.keyLines[setting.name] {
            fail(line: line, section: section.name, key: key,
                 "set twice in one section (first at line \(first)); each [\(section.name)] section is one rule")
            pendingRule?.failed = true
            return
        }
        pendingRule?.keyLines[setting.name] = line
        guard !value.isEmpty else {
            fail(line: line, section: section.name, key: key, "empty value; give \(setting.expected) or remove the line")
            pendingRule?.failed = true
            return
        }
        if setting == .stallMinSegments || setting == .stallRetransmitPercent {
            configuration.warnings.append(ConfigurationError(
                file: file, line: line, section: section.name, key: key,
                message: "no longer used and ignored: stall detection judges each socket's own state; see After= and MinSockets= in reachd.conf(5)"))
        }
        do throws(ValueProblem) {
            try apply(setting, value)
        } catch {
            fail(line: line, section: section.name, key: key, error.message)
            pendingRule?.failed = true
        }
    }

    private mutating func apply(_ setting: ConfigurationSetting, _ value: String) throws(ValueProblem) {
        if try applyToRule(setting, value) { return }
        switch setting {
        case .defaultTimeout:
            configuration.defaultTimeout = try ValueProblem.duration(value, in: Configuration.defaultTimeoutRange)
        case .maxConcurrentLookups:
            configuration.maxConcurrentLookups = try ValueProblem.integer(
                value, in: Configuration.maxConcurrentLookupsRange)
        case .negativeCacheTime:
            configuration.negativeCacheTime = try ValueProblem.duration(value, in: Configuration.negativeCacheTimeRange)
        case .lookupsPerUserPerSecond:
            configuration.lookupsPerUserPerSecond = try ValueProblem.integer(value, in: Configuration.lookupsPerUserPerSecondRange)
        case .lookupBurstPerUser:
            configuration.lookupBurstPerUser = try ValueProblem.integer(value, in: Configuration.lookupBurstPerUserRange)
        case .maxWatchesPerClient:
            configuration.maxWatchesPerClient = try ValueProblem.integer(
                value, in: Configuration.maxWatchesPerClientRange)
        case .maxWatches:
            configuration.maxWatches = try ValueProblem.integer(value, in: Configuration.maxWatchesRange)
        case .maxWatchesPerUser:
            configuration.maxWatchesPerUserSetting = try ValueProblem.integerOrAuto(value, in: Configuration.maxWatchesPerUserRange)
        case .maxHostChecks: configuration.maxHostChecks = try ValueProblem.integer(value, in: Configuration.maxHostChecksRange)
        case .maxHostChecksPerUser: configuration.maxHostChecksPerUser = try ValueProblem.integer(value, in: Configuration.maxHostChecksRange)
        case .priority(let kind):
            configuration.priorities[kind] = try ValueProblem.integer(value, in: Configuration.priorityRange)
        case .probeURL:
            switch ProbeURL.parse(value) {
            case let .success(url): configuration.connectivity.url = url
            case let .failure(error): throw ValueProblem(message: error.description)
            }
        case .expectedStatus:
            configuration.connectivity.expectation.status = try ValueProblem.integer(value, in: ConnectivitySettings.statusRange)
        case .expectedBody:
            configuration.connectivity.expectation.body = value
        case .probeInterval:
            configuration.connectivity.interval = try ValueProblem.duration(value, in: ConnectivitySettings.intervalRange)
        case .probeTimeout:
            configuration.connectivity.timeout = try ValueProblem.duration(value, in: ConnectivitySettings.timeoutRange)
        case .portalEndingLead:
            configuration.portal.endingLead = try ValueProblem.duration(value, in: PortalSettings.endingLeadRange)
        case .portalCAFile:
            guard value.hasPrefix("/") else { throw ValueProblem(message: "'\(value)' is not an absolute path; expected a PEM file such as /etc/reachd/portal-ca.pem") }
            configuration.portal.caFile = value
        case .waitTimeout:
            configuration.waitOnlineTimeout = try ValueProblem.duration(value, in: Configuration.waitOnlineTimeoutRange)
        case .waitTarget:
            configuration.waitOnlineTarget = try ValueProblem.target(value)
        case .waitKind:
            configuration.waitOnlineKind = try ValueProblem.waitKind(value)
        case .networkManager:
            configuration.networkManagerCompatibility = try ValueProblem.boolean(value)
        case .textfileDirectory:
            if let problem = MetricsSettings.validate(directory: value) { throw ValueProblem(message: problem) }
            configuration.metrics.textfileDirectory = value
        case .textfileInterval:
            configuration.metrics.textfileInterval = try ValueProblem.duration(value, in: MetricsSettings.textfileIntervalRange)
        case .stallDetect:
            configuration.stallDetection = try ValueProblem.boolean(value)
        case .stallAfter:
            configuration.stall.window = try ValueProblem.duration(value, in: Configuration.stallAfterRange)
        case .stallMinSockets:
            configuration.stall.minimumSockets = try ValueProblem.integer(value, in: Configuration.stallMinSocketsRange)
        case .stallMinSegments, .stallRetransmitPercent:
            break  // obsolete: `assign` warns
        case .stallDNSTimeouts:
            configuration.stall.dnsTimeouts = try ValueProblem.integer(value, in: Configuration.stallDNSTimeoutsRange)
        case .stallInterval:
            let interval = try ValueProblem.duration(value, in: Configuration.stallIntervalRange)
            configuration.stall.pollInterval = interval
            configuration.stall.maximumPollInterval = interval * Configuration.stallBackOffFactor
        case .unitsWatch:
            try watchUnits(value)
        case .name, .kind, .ignore, .metered, .constrained, .probe, .networkID, .rulePriority:
            break  // a rule's: `applyToRule`
        }
    }

    /// `[Units] Watch=`: each unit named is added once, up to `Configuration.watchedUnitsLimit`.
    private mutating func watchUnits(_ value: String) throws(ValueProblem) {
        for word in value.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
            switch UnitName.validate(String(word)) {
            case let .failure(refusal): throw ValueProblem(message: "'\(word)' is not a unit to watch (\(refusal.description))")
            case let .success(unit) where !configuration.watchedUnits.contains(unit):
                guard configuration.watchedUnits.count < Configuration.watchedUnitsLimit else {
                    throw ValueProblem(message: "more than \(Configuration.watchedUnitsLimit) units to watch: \(unit) is one too many")
                }
                configuration.watchedUnits.append(unit)
            case .success: break
            }
        }
    }

    /// The keys of the [Interface] or [Network] rule being read; false for any other key.
    private mutating func applyToRule(_ setting: ConfigurationSetting, _ value: String) throws(ValueProblem) -> Bool {
        switch setting {
        case .name:
            do { try InterfaceRule.validate(pattern: value) } catch { throw ValueProblem(message: error.description) }
            pendingRule?.rule.pattern = value
        case .kind:
            pendingRule?.rule.kind = try ValueProblem.kind(value)
        case .ignore:
            pendingRule?.rule.ignore = try ValueProblem.boolean(value)
        case .metered:
            let metered = try ValueProblem.boolean(value)
            if pendingRule?.network != nil { pendingRule?.network?.metered = metered } else { pendingRule?.rule.metered = metered }
        case .constrained:
            let constrained = try ValueProblem.boolean(value)
            if pendingRule?.network != nil { pendingRule?.network?.constrained = constrained } else { pendingRule?.rule.constrained = constrained }
        case .probe:
            let probe = try ValueProblem.boolean(value)
            if pendingRule?.network != nil { pendingRule?.network?.probe = probe } else { pendingRule?.rule.probe = probe }
        case .networkID:
            guard NetworkRule.isValid(id: value) else {
                throw ValueProblem(message: "'\(value)' is not a network's name; expected 16 hexadecimal digits (lowercase) as reachctl status --verbose shows it")
            }
            pendingRule?.network?.id = value
        case .rulePriority:
            pendingRule?.rule.priority = try ValueProblem.integer(value, in: Configuration.priorityRange)
        default:
            return false
        }
        return true
    }

    private mutating func fail(
        line: Int?, section: String? = nil, key: String? = nil, _ message: String
    ) {
        errors.append(ConfigurationError(file: file, line: line, section: section, key: key, message: message))
    }

    package static func tooLargeMessage(_ size: Int) -> String {
        "the file is \(size) bytes, more than the limit of \(Configuration.maximumFileBytes) (1 MiB); it is refused"
    }
}

/// An `[Interface]` or `[Network]` section as read so far.
private struct PendingRule {
    /// The header's line.
    package var line: Int
    /// The keys set so far; the pattern stays empty until `Name=`.
    package var rule = InterfaceRule(pattern: "")
    /// A `[Network]` section's rule instead; its name stays empty until `ID=`.
    package var network: NetworkRule?
    /// Canonical key name to the line that set it, to refuse a second assignment.
    package var keyLines: [String: Int] = [:]
    /// Some line of the section was wrong: the rule is dropped rather than applied in part.
    package var failed = false
}
