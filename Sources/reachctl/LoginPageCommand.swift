import ArgumentParser
import Reachability
#if canImport(Glibc)
import Glibc
#endif

/// `reachctl login-page`: the captive portal's login page for the person at the screen, opened
/// once per portal session (reachd-login-page.service, a user unit; docs/admins.md). It follows
/// reachd's signals across its restarts and hands each new session's login URL to a program
/// (xdg-open) as its one argument; what to open is `LoginPageOpenings`' decision.
struct LoginPageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login-page",
        abstract: "Open the captive portal's login page once per portal session (reachd-login-page.service, a user unit).",
        discussion: """
            Follows reachd and, each time the host meets a captive portal (the network's portal \
            API says captive, or reachd's probe was redirected), runs xdg-open (or --open-with) \
            with the login page's URL as its one argument: once per portal session, that is \
            again only when the login URL changes or after a time without a portal. A URL that is \
            not http or https, or holds a control character or a space, is never opened: one \
            line on standard error names it. At most 3 pages are opened in a minute; past that a \
            line says which was not. It follows reachd across its restarts and never answers \
            in-process (only reachd asks the network's portal); with --daemon it fails when reachd \
            goes away. It prints no answer to parse: --json is refused.

            For desktops without NetworkManager (whose desktop opens the page itself): \
            systemctl --user enable --now reachd-login-page.service

            Examples:
              reachctl login-page
              reachctl login-page --open-with firefox

            Exit status: 255 usage or error (reachd not running, the program not found; with \
            --daemon, reachd went away). It runs until stopped.
            """
    )

    @Option(
        name: .customLong("open-with"),
        help: ArgumentHelp("The program that opens the page, given the URL as its one argument (a name found in PATH, or a path).", valueName: "program"))
    var program = "xdg-open"

    // Held, not shown: a global --json reaches this group too, and is refused rather than ignored.
    @OptionGroup(visibility: .private) var output: OutputOptions

    @OptionGroup var options: CommonOptions

    func validate() throws {
        if output.json {
            throw ValidationError("--json: login-page prints no answer to parse; it opens pages and says so in one line each. For JSON, ask reachctl monitor --json.")
        }
        if options.answersInProcess {
            throw ValidationError("login-page follows reachd, which alone asks the network's portal: drop --netns (and --sysfs-root).")
        }
        if program.isEmpty { throw ValidationError("--open-with needs a program, like xdg-open.") }
    }

    func run() async throws {
        try await reportingErrors {
            guard let path = PageOpener.find(program) else {
                throw ReachctlError("--open-with '\(program)': no such program in PATH, or not executable")
            }
            let source = try reachd()
            defer { source.stop() }
            let opener = PageOpener(program: path)
            let updates = try await source.updates()
            // Keeps the picture whole from the first snapshot and each change after it, as `wait` does.
            let picture = WaitCommand.Condition(target: nil, kind: nil)
            var openings = LoginPageOpenings()
            for await update in updates {
                _ = picture.record(update)
                opener.reap()
                guard let snapshot = picture.state.snapshot else { continue }
                switch openings.record(snapshot.host, at: .now) {
                case .nothing: continue
                case let .open(url): opener.open(url)
                case let .refuse(why), let .limit(why): Terminal.write("reachctl: \(why)\n", to: STDERR_FILENO)
                }
            }
            throw ReachctlError("reachd went away (--daemon: not waiting for it to return)")
        }
    }

    /// reachd, followed across its restarts (unless --daemon); never the library in-process,
    /// which asks no portal.
    private func reachd() throws -> any ReachabilitySource {
        let follows = !options.requireDaemon
        return try ReachdOrInProcess.choose(
            bus: options.bus, probeTimeout: CommonOptions.probeTimeout,
            callTimeout: max(CommonOptions.probeTimeout, DaemonSource.callTimeout),
            daemon: { client, _ throws -> any ReachabilitySource in try DaemonSource(client: client, follows: follows) }
        ) { (unavailable: ReachdUnavailable?) throws(ReachctlError) -> any ReachabilitySource in
            throw ReachctlError("reachd is not available (\(unavailable?.reason ?? "no answer")): only reachd asks the network's portal")
        }
    }
}

/// Runs the program that opens a page: its own process, the URL as its one argument (no shell
/// reads it), standard streams and environment (DISPLAY, WAYLAND_DISPLAY) inherited. Never
/// waited for: a browser started by xdg-open may run for hours; ended ones are reaped as updates come.
private final class PageOpener {
    let program: String
    private var running: [pid_t: String] = [:]

    init(program: String) { self.program = program }

    func open(_ url: String) {
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(program), strdup(url), nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let failed = posix_spawn(&pid, program, nil, nil, argv, environ)
        guard failed == 0 else {
            Terminal.write("reachctl: could not run \(program) for the login page \(url.inertExcerpt()): \(String(cString: strerror(failed)))\n", to: STDERR_FILENO)
            return
        }
        running[pid] = url
        Terminal.writeLine("opened the login page \(url.inertExcerpt()) with \(program)")
    }

    /// Collects the openers that ended, saying which failed.
    func reap() {
        for (pid, url) in running {
            var status: Int32 = 0
            guard waitpid(pid, &status, WNOHANG) == pid else { continue }
            running[pid] = nil
            let code = (status >> 8) & 0xFF
            if status & 0x7F != 0 || code != 0 {
                let how = status & 0x7F == 0 ? "exited \(code)" : "was killed by signal \(status & 0x7F)"
                Terminal.write("reachctl: \(program) \(how) opening the login page \(url.inertExcerpt())\n", to: STDERR_FILENO)
            }
        }
    }

    /// `name` as a path when it holds a slash, else the first executable of that name in PATH.
    static func find(_ name: String) -> String? {
        if name.contains("/") { return access(name, X_OK) == 0 ? name : nil }
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
