/// One problem in a configuration file, located so a person can go and fix it.
///
/// The description reads `FILE:LINE: [Section] Key: message`, the parts that do not apply left out:
/// ```
/// /etc/reachd/reachd.conf:7: [Checks] DefaultTimeout: invalid duration 'soon': it is not a duration; use ...
/// /etc/reachd/reachd.conf.d/10-wifi.conf: cannot open: Permission denied
/// ```
package struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file as it was named to the parser or loader.
    package var file: String
    /// The line, counting from 1, where the offending (logical) line starts; nil for the whole file.
    package var line: Int?
    /// The section the line is in, without brackets, when there is one.
    package var section: String?
    /// The key of the offending assignment, as written.
    package var key: String?
    /// What is wrong, naming the offending value.
    package var message: String

    package init(file: String, line: Int?, section: String? = nil, key: String? = nil, message: String) {
        self.file = file
        self.line = line
        self.section = section
        self.key = key
        self.message = message
    }

    package var description: String {
        var text = file
        if let line { text += ":\(line)" }
        text += ": "
        if let section { text += "[\(section)] " }
        if let key { text += "\(key): " }
        return text + message
    }
}

/// Every problem found in the configuration files, in the order the files and lines were read. reachd
/// refuses a configuration with any of them (at start it exits, on reload it keeps the old one).
package struct ConfigurationErrors: Error, Sendable, Hashable, CustomStringConvertible {
    package var errors: [ConfigurationError]

    package init(_ errors: [ConfigurationError]) {
        self.errors = errors
    }

    /// One error per line.
    package var description: String {
        errors.map(\.description).joined(separator: "\n")
    }
}
