/// The command word of a reachctl command line, read as `ip` reads its objects: a unique prefix
/// stands for its command (`reachctl st` is `status`, `reachctl int` is `interfaces`), an alias
/// for its command (`interface`), and a word that names none is refused with the nearest
/// command, instead of ArgumentParser's "Unexpected argument" from the default `status`.
/// `help WORD` reads its word the same way, so `reachctl help stauts` is an error too.
///
/// It only rewrites that one word, before ArgumentParser parses the line: options, their values
/// and the commands themselves stay ArgumentParser's.
struct CommandWord {
    /// A command a user may name: its name and its aliases.
    struct Command {
        var name: String
        var aliases: [String]
    }

    /// A word that names no command, or more than one: the message says which and what to type.
    struct Refusal: Error, CustomStringConvertible {
        var description: String
    }

    var commands: [Command]
    /// Options that may stand before the command word and take the next argument as their
    /// value (`--netns ns1 status`): that value is never the command word.
    var valueOptions: Set<String>
    /// Options that may stand before the command word without a value.
    var flags: Set<String>

    /// `arguments` (without the program name) with the command word, and the word after `help`,
    /// spelled out. A line whose first word is not preceded by known options only is returned as
    /// it is, for ArgumentParser to judge (`reachctl --kind wifi`, the default command's option).
    func resolve(_ arguments: [String]) throws(Refusal) -> [String] {
        var arguments = arguments
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            // `--` ends the options; `---completion` is the completion scripts' own protocol.
            if argument == "--" || argument.hasPrefix("---") { return arguments }
            if argument.hasPrefix("-"), argument.count > 1 {
                let name = String(argument.prefix { $0 != "=" })
                if valueOptions.contains(name) {
                    index += name == argument ? 2 : 1
                } else if flags.contains(name) {
                    index += 1
                } else {
                    return arguments
                }
                continue
            }
            let command = try self.command(for: argument, after: nil)
            arguments[index] = command
            let next = index + 1
            if command == "help", next < arguments.endIndex, !arguments[next].hasPrefix("-") {
                arguments[next] = try self.command(for: arguments[next], after: "help")
            }
            return arguments
        }
        return arguments
    }

    /// `arguments` with each value of `options` that begins with a minus and a digit joined to
    /// its option (`--since -2h` -> `--since=-2h`), as journalctl reads `--since -2h`: apart,
    /// ArgumentParser would take the value for an option and say "Missing value".
    static func joiningSignedValues(_ arguments: [String], of options: Set<String>) -> [String] {
        var joined: [String] = []
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            let next = index + 1
            if argument == "--" { return joined + arguments[index...] }
            if options.contains(argument), next < arguments.endIndex, arguments[next].hasPrefix("-"),
                arguments[next].dropFirst().first?.isNumber == true
            {
                joined.append(argument + "=" + arguments[next])
                index += 2
            } else {
                joined.append(argument)
                index += 1
            }
        }
        return joined
    }

    /// The command `word` names: its name or an alias, else the one command that a prefix of
    /// names or aliases begins with.
    func command(for word: String, after verb: String?) throws(Refusal) -> String {
        let words = commands.flatMap { command in ([command.name] + command.aliases).map { (word: $0, command: command.name) } }
        if let exact = words.first(where: { $0.word == word }) { return exact.command }
        // A two-letter command (`is`) is typed whole: its only prefix is one letter, and `i`
        // meant `interfaces` before `is` came.
        let named = words.filter { !word.isEmpty && $0.word.count > 2 && $0.word.hasPrefix(word) }.map(\.command)
        let candidates = commands.map(\.name).filter(named.contains)
        let context = verb.map { "\($0): " } ?? ""
        if candidates.count == 1 { return candidates[0] }
        if candidates.count > 1 {
            let names = candidates.map { "'\($0)'" }
            throw Refusal(description: "\(context)'\(word)' is ambiguous: it could be \(names.dropLast().joined(separator: ", ")) or \(names.last!); type more of it")
        }
        var message = "\(context)unknown command '\(word)'"
        if let nearest = nearest(to: word, in: words) {
            message += "; did you mean '\(nearest)'?"
        } else if verb == nil, word.contains(where: { $0 == "." || $0 == ":" }) {
            // A target where the command belongs: the likeliest intent is to check it.
            message += "; to check a target: reachctl check \(word)"
        }
        throw Refusal(description: message + " (commands: \(commands.map(\.name).joined(separator: ", ")))")
    }

    /// The command whose name or alias is within two edits of `word` (one for short words), the
    /// closest first: a typo, not a different word.
    private func nearest(to word: String, in words: [(word: String, command: String)]) -> String? {
        let scored = words.map { (command: $0.command, distance: Self.editDistance(Array(word), Array($0.word))) }
        guard let best = scored.min(by: { $0.distance < $1.distance }) else { return nil }
        let allowed = word.count <= 4 ? 1 : 2
        return best.distance <= allowed ? best.command : nil
    }

    /// Edits (insert, delete, replace, swap two neighbours) that turn `a` into `b`: a swap is
    /// one edit, so `stauts` is one away from `status`.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var table = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var value = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    value = min(value, table[i - 2][j - 2] + 1)
                }
                table[i][j] = value
            }
        }
        return table[a.count][b.count]
    }
}
