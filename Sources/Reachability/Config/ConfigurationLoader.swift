#if canImport(Glibc)
import Glibc
#endif

extension Configuration {
    /// Reads the configuration files, systemd's way, and applies them to the defaults.
    ///
    /// `directories` are searched in priority order (`["/etc/reachd", "/run/reachd", "/usr/lib/reachd"]`
    /// would mirror systemd; the default is `/etc/reachd` alone):
    /// - the main file is `reachd.conf` from the first directory that has one; none at all means defaults;
    /// - drop-ins are the `*.conf` files in every directory's `reachd.conf.d/`, a name in an earlier
    ///   directory hiding the same name in later ones; they are applied after the main file in the
    ///   lexical (byte) order of their names, whatever their directory. Hidden files (`.name.conf`) are
    ///   skipped; a missing directory is no error.
    ///
    /// A name that is `/dev/null` (a symbolic link to it, as in systemd) masks: it is not read and hides
    /// the same name in later directories. Anything else that is not a regular file (a directory, a
    /// FIFO, a socket, another device such as `/dev/zero`) is an error naming the path, and is never
    /// opened: a FIFO would block a reader, a device could be read forever, and taking either for "no
    /// configuration" would hide the mistake.
    ///
    /// Every problem in every file is collected; any one fails the load, so a reload can keep the old
    /// configuration. Files are read with a bound (`maximumFileBytes`) and must be UTF-8 text.
    ///
    /// `named`: the directories were named by the user (`--config-dir`), so each must exist: a
    /// typo read as "no configuration" would run with the defaults and say nothing.
    package static func load(directories: [String] = defaultDirectories, named: Bool = false) -> Result<Configuration, ConfigurationErrors> {
        var configuration = Configuration.default
        var errors: [ConfigurationError] = []
        if named {
            errors = directories.compactMap { directory in
                ConfigurationFileReader.directoryProblem(directory).map {
                    ConfigurationError(file: directory, line: nil, message: "\($0) (named by --config-dir)")
                }
            }
            if !errors.isEmpty { return .failure(ConfigurationErrors(errors)) }
        }

        func apply(_ path: String, _ outcome: ConfigurationFileReader.Outcome) {
            switch outcome {
            case .missing, .notRegular:
                break
            case .dangling(let target):
                configuration.warnings.append(ConfigurationError(
                    file: path, line: nil, message: "a symbolic link to \(target), which does not exist; ignored"))
            case .failed(let error):
                errors.append(error)
            case .text(let text):
                configuration.sources.append(path)
                errors += parse(text, file: path, into: &configuration)
            }
        }

        for directory in directories {
            let path = ConfigurationFileReader.join(directory, fileName)
            let outcome = ConfigurationFileReader.read(path)
            if case .missing = outcome { continue }
            if case .dangling = outcome {
                apply(path, outcome)
                continue
            }
            apply(path, outcome)
            break
        }

        var dropIns: [String: String] = [:]  // file name -> path, the first directory's
        for directory in directories {
            let folder = ConfigurationFileReader.join(directory, dropInDirectoryName)
            switch ConfigurationFileReader.list(folder) {
            case .failure(let error):
                errors.append(error)
            case .success(let names):
                for name in names where name.hasSuffix(".conf") && !name.hasPrefix(".") && dropIns[name] == nil {
                    dropIns[name] = ConfigurationFileReader.join(folder, name)
                }
            }
        }
        let ordered = dropIns.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        if ordered.count > maximumDropIns {
            let folders = directories.map { ConfigurationFileReader.join($0, dropInDirectoryName) }
            errors.append(ConfigurationError(
                file: folders.joined(separator: ", "), line: nil,
                message: "\(ordered.count) drop-in files, more than the limit of \(maximumDropIns); none is read"))
        } else {
            for name in ordered {
                guard let path = dropIns[name] else { continue }
                apply(path, ConfigurationFileReader.read(path))
            }
        }

        return errors.isEmpty ? .success(configuration) : .failure(ConfigurationErrors(errors))
    }
}

/// Bounded reads of configuration files and listings of drop-in directories, with Glibc.
package enum ConfigurationFileReader {
    package enum Outcome {
        /// No such file (or a dangling symlink): not an error, the file is optional.
        case missing
        /// A symbolic link whose target does not exist: not read, and warned about.
        case dangling(target: String)
        /// `/dev/null` (a masked name): nothing to read.
        case notRegular
        case failed(ConfigurationError)
        case text(String)
    }

    package static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    package static func read(_ path: String) -> Outcome {
        func failure(_ message: String, line: Int? = nil) -> Outcome {
            .failed(ConfigurationError(file: path, line: line, message: message))
        }
        // What the name is, before opening it: opening a device may act on it (a tape rewinds).
        var named = stat()
        if stat(path, &named) == 0, let problem = notRegularFile(named) {
            return problem.isEmpty ? .notRegular : failure(problem)
        }
        // O_NONBLOCK: opening a FIFO (put there since the stat) must not wait for a writer; it is
        // refused below anyway.
        let descriptor = retryingOnInterrupt { open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK) }
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT {
                // A symbolic link to nothing is most likely a mistake (a drop-in linked from a
                // place that moved): say so by name, but, as for any missing file, carry on.
                var link = stat()
                if lstat(path, &link) == 0, link.st_mode & S_IFMT == S_IFLNK {
                    return .dangling(target: linkTarget(path))
                }
                return .missing
            }
            return failure("cannot open: \(describe(code))")
        }
        let file = Descriptor(descriptor)  // closed when this function returns

        var status = stat()
        guard fstat(file.rawValue, &status) == 0 else { return failure("cannot stat: \(describe(errno))") }
        if let problem = notRegularFile(status) { return problem.isEmpty ? .notRegular : failure(problem) }
        let limit = Configuration.maximumFileBytes
        guard status.st_size <= limit else { return failure(ConfigurationParser.tooLargeMessage(Int(status.st_size))) }

        // Read until the end, but never more than one byte past the limit (the file may grow meanwhile).
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(status.st_size))
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while bytes.count <= limit {
            let wanted = min(chunk.count, limit + 1 - bytes.count)
            let count = chunk.withUnsafeMutableBytes { buffer in
                retryingOnInterrupt { Glibc.read(file.rawValue, buffer.baseAddress, wanted) }
            }
            guard count >= 0 else { return failure("cannot read: \(describe(errno))") }
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        guard bytes.count <= limit else { return failure(ConfigurationParser.tooLargeMessage(bytes.count)) }
        return text(bytes, path: path)
    }

    /// Why a file of this status is not read: nil for a regular file, empty for `/dev/null` (it
    /// masks), else the sentence for the error.
    package static func notRegularFile(_ status: stat) -> String? {
        let kind: String
        switch status.st_mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFDIR: return "is a directory, not a file"
        case S_IFCHR:
            var null = stat()
            if stat("/dev/null", &null) == 0, null.st_mode & S_IFMT == S_IFCHR, null.st_rdev == status.st_rdev { return "" }
            kind = "a character device"
        case S_IFBLK: kind = "a block device"
        case S_IFIFO: kind = "a FIFO"
        case S_IFSOCK: kind = "a socket"
        default: kind = "not a regular file"
        }
        return "is \(kind), not a regular file; it is not read (a link to /dev/null masks a name)"
    }

    /// The bytes as a String, or the line of the first byte that is not UTF-8 text.
    package static func text(_ bytes: [UInt8], path: String) -> Outcome {
        if !bytes.contains(0), let text = String(validating: bytes, as: UTF8.self) { return .text(text) }
        for (index, line) in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            if line.contains(0) {
                return .failed(ConfigurationError(
                    file: path, line: index + 1, message: "contains a NUL byte; configuration files are text"))
            }
            if String(validating: line, as: UTF8.self) == nil {
                return .failed(ConfigurationError(
                    file: path, line: index + 1, message: "not valid UTF-8; configuration files are UTF-8 text"))
            }
        }
        // A sequence cut by a newline is caught per line; this is not reached, but stays an error.
        return .failed(ConfigurationError(file: path, line: nil, message: "not valid UTF-8"))
    }

    /// The names in a directory; an empty list when it does not exist.
    package static func list(_ path: String) -> Result<[String], ConfigurationError> {
        switch DirectoryNames.list(path) {
        case let .success(names): return .success(names)
        case let .failure(error) where error.errno == ENOENT || error.errno == ENOTDIR: return .success([])
        case let .failure(error): return .failure(ConfigurationError(file: path, line: nil, message: "cannot list: \(describe(error.errno))"))
        }
    }

    private static func linkTarget(_ path: String) -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink(path, &buffer, buffer.count - 1)
        return count > 0 ? String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
    }

    /// Why `path` is no directory to read configuration from; nil when it is one.
    package static func directoryProblem(_ path: String) -> String? {
        var status = stat()
        guard stat(path, &status) == 0 else { return errno == ENOENT ? "no such directory" : "cannot read: \(describe(errno))" }
        return status.st_mode & S_IFMT == S_IFDIR ? nil : "not a directory"
    }

    private static func describe(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
