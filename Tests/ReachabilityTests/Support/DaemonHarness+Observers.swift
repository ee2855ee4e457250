import Foundation
import Synchronization
@testable import Reachability

/// What the tests see reachd say without asking: its sd-notify datagrams and its signals on the bus.
extension DaemonHarness {
    /// `NOTIFY_SOCKET`: an AF_UNIX datagram socket bound by the test; every datagram is kept with
    /// the time it arrived.
    final class NotifySocket: Sendable {
        struct Datagram: Sendable {
            let time: ContinuousClock.Instant
            let text: String
            /// `KEY=VALUE` lines (a later key wins).
            var fields: [String: String] {
                var fields: [String: String] = [:]
                for line in text.split(separator: "\n") {
                    guard let equals = line.firstIndex(of: "=") else { continue }
                    fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
                }
                return fields
            }
        }
        private final class State: Sendable {
            let datagrams = Mutex<[Datagram]>([])
            let stop = Atomic<Bool>(false)
        }

        let path: String
        private let state = State()

        init(path: String) throws {
            self.path = path
            let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw CommandFailed(command: "socket(AF_UNIX)", status: errno, output: "") }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(path.utf8)
            guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
                Glibc.close(fd)
                throw CommandFailed(command: "bind \(path)", status: ENAMETOOLONG, output: "")
            }
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in bytes.enumerated() { raw[index] = byte }
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard bound == 0 else {
                Glibc.close(fd)
                throw CommandFailed(command: "bind \(path)", status: errno, output: "")
            }
            let state = self.state
            let thread = Thread {
                var buffer = [UInt8](repeating: 0, count: 65536)
                while !state.stop.load(ordering: .relaxed) {
                    var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    guard poll(&entry, 1, 20) > 0 else { continue }
                    let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                    guard count > 0 else { continue }
                    let datagram = Datagram(time: .now, text: String(decoding: buffer[0..<count], as: UTF8.self))
                    state.datagrams.withLock { $0.append(datagram) }
                }
                Glibc.close(fd)
            }
            thread.start()
        }

        deinit { close() }

        func close() { state.stop.store(true, ordering: .relaxed) }

        var datagrams: [Datagram] { state.datagrams.withLock { $0 } }

        /// Waits for a datagram (at index `from` or later) that satisfies `condition`; returns
        /// it and its index.
        @discardableResult
        func wait(
            for what: String, from: Int = 0, timeout: Duration = waitLimit, _ condition: (Datagram) -> Bool
        ) async throws -> (index: Int, datagram: Datagram) {
            let deadline = ContinuousClock.now + timeout
            while true {
                let all = datagrams
                if from < all.count, let index = all[from...].firstIndex(where: condition) { return (index, all[index]) }
                guard ContinuousClock.now < deadline else {
                    throw TimedOut(what: "\(what) on NOTIFY_SOCKET; have \(all.map(\.text).filter { $0 != "WATCHDOG=1" })")
                }
                try await Task.sleep(for: .milliseconds(2))
            }
        }
    }

    /// One signal as `busctl monitor --json=short` printed it.
    struct Signal {
        var path: String
        var interface: String
        var member: String
        var signature: String
        var data: [Any]
        /// When busctl's line reached the test (its reader thread), not when a test looked.
        var arrived: ContinuousClock.Instant

        /// `Changed(u flags, s primary_interface, t generation)`.
        var changed: (flags: UInt32, primaryInterface: String, generation: UInt64)? {
            guard member == "Changed", data.count == 3, let flags = DaemonHarness.jsonNumber(data[0]), let primary = data[1] as? String,
                let generation = DaemonHarness.jsonNumber(data[2])
            else { return nil }
            return (UInt32(flags), primary, generation)
        }

        /// PropertiesChanged: the interface and the changed values (variants unwrapped).
        var propertiesChanged: (interface: String, values: [String: Any])? {
            guard member == "PropertiesChanged", data.count >= 2, let interface = data[0] as? String,
                let values = data[1] as? [String: Any]
            else { return nil }
            var unwrapped: [String: Any] = [:]
            for (key, value) in values { unwrapped[key] = (value as? [String: Any])?["data"] ?? value }
            return (interface, unwrapped)
        }
    }

    /// A running `busctl monitor --json=short --match RULE`, its signals parsed as they arrive.
    final class SignalMonitor: @unchecked Sendable {
        let child: ChildProcess

        init(address: String, match: String) throws {
            child = try ChildProcess("/usr/bin/busctl", ["--address=\(address)", "monitor", "--json=short", "--match", match])
            // busctl says so once BecomeMonitor succeeded: from here on nothing is missed.
            try child.waitForErrorLine(containing: "Monitoring bus message stream")
        }

        var signals: [Signal] {
            child.timedLines.compactMap { line, arrived -> Signal? in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    object["type"] as? String == "signal"
                else { return nil }
                let payload = object["payload"] as? [String: Any]
                return Signal(
                    path: object["path"] as? String ?? "", interface: object["interface"] as? String ?? "",
                    member: object["member"] as? String ?? "", signature: payload?["type"] as? String ?? "",
                    data: payload?["data"] as? [Any] ?? [], arrived: arrived)
            }
        }

        /// The `Changed` signals so far.
        var changes: [(flags: UInt32, primaryInterface: String, generation: UInt64)] { signals.compactMap(\.changed) }

        /// Waits until `condition` holds for the signals so far.
        @discardableResult
        func wait(for what: String, timeout: Duration = waitLimit, _ condition: ([Signal]) -> Bool) async throws -> [Signal] {
            let deadline = ContinuousClock.now + timeout
            while true {
                let signals = self.signals
                if condition(signals) { return signals }
                guard ContinuousClock.now < deadline else {
                    throw TimedOut(what: "\(what); monitor saw \(child.lines), stderr \(child.errorLines)")
                }
                try await Task.sleep(for: .milliseconds(2))
            }
        }

        func stop() { child.kill() }
    }
}
