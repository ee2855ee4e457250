import ArgumentParser
import Reachability
#if canImport(Glibc)
import Glibc
#endif

struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "List when the host (and each uplink) was offline or degraded, for how long, and why.",
        discussion: """
            reachd records every change of the host's answer, and of each uplink's (a link that \
            carried a default route), with the first layer that failed, as `reachctl why` names \
            it: radio, link, address, gateway, route, dns, traffic or portal. This command turns \
            those records into outages (the host not online; an uplink without its default \
            route) and degradations (online, but the traffic stalled or the probe met a portal \
            or no internet), each with its start, end, duration, cause, reason and interface, \
            and a summary line: how many outages, the total offline time, the longest. Time \
            nobody watched (the host asleep, reachd stopped) is kept apart, as intervals of \
            kind asleep and stopped, never counted offline.

            The records come from reachd's memory (the last 1,024 changes per lane; D-Bus \
            GetHistory) and, for what lies before it (reachd restarted, or the period is \
            longer), from the journal (entries with MESSAGE_ID=\(HistoryRecord.journalMessageID); \
            reading the system journal needs root or the systemd-journal group). Only entries \
            journald says reachd sent are read (_UID root or the user reachd, and \
            _SYSTEMD_UNIT=reachd.service, _COMM=reachd or an _EXE named reachd): any user can \
            write the rest. When one of the two cannot be read, reachctl says so on standard \
            error and shows the other.

            --svg prints an SVG timeline instead (one lane for the host, one per uplink, bars \
            coloured by cause, a legend), as `systemd-analyze plot` draws a boot. --json prints \
            one object: since, now, source, intervals (lane, scope, kind, start, end, \
            durationUSec, ongoing, cause, reason, interface, state) and summary.

            Examples:
              reachctl history
              reachctl history --since 1d
              reachctl history --since '2026-11-27 08:00' --json | jq '.summary'
              reachctl history --since yesterday --svg > outages.svg

            Exit status: 0 success, 255 usage error or nothing could be read.
            """
    )

    @Option(help: ArgumentHelp(
        "Begin the period here: \(HistorySince.acceptedForms). Default: as far back as the records go.",
        valueName: "TIME"))
    var since: String?

    @Flag(help: "Print an SVG timeline of the period instead of the table.")
    var svg = false

    @Option(
        name: .customLong("journal-directory"),
        help: ArgumentHelp("Read the journal files in DIR instead of the system's journal (as journalctl -D does).", valueName: "DIR"))
    var journalDirectory: String?

    @OptionGroup var output: OutputOptions

    @OptionGroup var options: CommonOptions

    func validate() throws {
        if svg, output.json { throw ValidationError("--svg and --json: choose one form.") }
        if let since {
            do {
                _ = try HistorySince.parse(since, now: History.now())
            } catch {
                throw ValidationError(error.description)
            }
        }
        if options.answersInProcess {
            throw ValidationError("--netns and --sysfs-root: history is reachd's, kept as it runs; an in-process answer has none.")
        }
    }

    func run() async throws {
        let start = try since.map { text throws in try HistorySince.parse(text, now: History.now()) }
        let (records, source) = try await reportingErrors { try await collect(since: start ?? 0) }
        // Now, after the reading: a record made while it ran is not from the future.
        let timeline = HistoryTimeline(records: records, since: start, now: History.now())
        if svg {
            Terminal.write(HistoryOutput.svg(timeline), to: STDOUT_FILENO, raw: true)
        } else {
            Terminal.writeLine(output.json ? HistoryOutput.json(timeline, source: source).serialized() : HistoryOutput.text(timeline))
        }
    }

    /// reachd's records, and the journal's from before reachd's memory begins; which ones.
    private func collect(since: UInt64) async throws -> ([HistoryRecord], String) {
        var records: [HistoryRecord] = []
        var sources: [String] = []
        var oldest: UInt64?
        do {
            let daemon = try DaemonSource.open(options.bus, probeTimeout: CommonOptions.probeTimeout)
            defer { daemon.stop() }
            let answer = try await daemon.history(since: since)
            records = answer.records
            oldest = answer.oldest == 0 ? nil : answer.oldest
            sources.append("reachd")
        } catch {
            if options.requireDaemon { throw ReachctlError("reachd is not available: \(error)") }
            Terminal.write("reachctl: reachd is not available (\(error)); reading the journal only\n", to: STDERR_FILENO)
        }
        // reachd remembers everything asked for: the journal would only repeat it.
        if let oldest, oldest <= since { return (records, sources.joined(separator: "+")) }
        do {
            let reading = try HistoryJournal.records(until: oldest, directory: journalDirectory)
            records = reading.records + records
            sources.append("journal")
            report(reading)
        } catch {
            guard !sources.isEmpty else { throw ReachctlError("\(error); no record of outages to show") }
            let from = oldest.map { " before \(HistoryOutput.timestamp($0))" } ?? ""
            Terminal.write("reachctl: \(error); outages\(from) are not known\n", to: STDERR_FILENO)
        }
        return (records, sources.joined(separator: "+"))
    }

    /// On standard error: entries with reachd's MESSAGE_ID that reachd did not send (someone
    /// is writing them), and a read that a bound ended (older outages are not shown).
    private func report(_ reading: HistoryJournal.Reading) {
        if reading.ignored > 0 {
            Terminal.write("reachctl: ignored \(reading.ignored) journal entries with reachd's MESSAGE_ID that reachd did not send\n", to: STDERR_FILENO)
        }
        if let bound = reading.bound {
            let from = reading.records.first.map { " before \(HistoryOutput.timestamp($0.time))" } ?? ""
            Terminal.write("reachctl: the journal was read up to its bound of \(bound); outages\(from) are not shown\n", to: STDERR_FILENO)
        }
    }
}

enum History {
    /// CLOCK_REALTIME in microseconds, as reachd and the journal stamp records.
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return UInt64(time.tv_sec) * 1_000_000 + UInt64(time.tv_nsec) / 1000
    }
}
