#if canImport(Glibc)
import Glibc
#endif

/// The rfkill state of Wi-Fi and cellular links, as Engine facts (`NetworkEvent.radio`), for the
/// kernel mirror. Two sources:
///
/// - /dev/rfkill, when it can be opened (read-only, no privilege needed): the kernel sends one
///   ADD per switch on open, then CHANGE and DEL as they happen, so a radio switched back on is
///   known at once, even while its link stays down. Its descriptor is watched by the loop
///   (`readDevice`).
/// - sysfs alone otherwise (no rfkill in the kernel, or a sandbox that hides /dev): a link's
///   switches are read when the link appears and again on each of its own kernel events.
///   Switching a radio off takes its links down, so the kernel says so at that moment; no
///   polling, no timer. Switching it back on is seen with the link's next event (its coming up).
///
/// Either way a link's event reads its switches from sysfs first: the kernel records a block
/// before it takes the link down, so the fact travels in the same batch as the link's own
/// change (one `Changed`).
package final class RadioFollower {
    /// Where the state comes from, for the journal.
    package enum Source: Hashable, Sendable, CustomStringConvertible {
        case device(String)
        case sysfs(why: String)

        package var description: String {
            switch self {
            case let .device(path): "following \(path)"
            case let .sysfs(why): "\(why), reading sysfs on link events"
            }
        }
    }

    private let sysfs: SysfsReader
    /// /dev/rfkill while it is followed.
    private var device: Descriptor?
    package private(set) var source: Source
    /// The device ended (end of file or an error): the loop stops watching it, then `closeDevice`.
    package private(set) var deviceEnded = false
    /// Each Wi-Fi or cellular link seen: its name and kind, and the state of its switches.
    private var radioLinks: [Int32: RadioLink] = [:]
    /// One record is 8 bytes today; room for the larger records of newer kernels.
    private var record = [UInt8](repeating: 0, count: 64)

    package struct RadioLink {
        var name: String
        var kind: InterfaceKind
        var switches: [UInt32: RadioBlock]

        var block: RadioBlock { switches.values.reduce(into: []) { $0.formUnion($1) } }
    }

    /// At most this many records are read per turn of the loop (a switch flapping cannot keep it).
    package static let recordsPerTurn = 64

    package init(sysfs: SysfsReader, devicePath: String?) {
        self.sysfs = sysfs
        guard let devicePath else {
            source = .sysfs(why: "/dev/rfkill not followed")
            return
        }
        do {
            device = try Descriptor(checking: open(devicePath, O_RDONLY | O_NONBLOCK | O_CLOEXEC), "cannot open \(devicePath)")
            source = .device(devicePath)
        } catch {
            source = .sysfs(why: error.errno == ENOENT ? "\(devicePath) absent" : "\(error)")
        }
    }

    /// The descriptor for the loop to watch; nil when following sysfs alone.
    package var descriptor: Int32? { device?.rawValue }

    /// Stops following the device (after `deviceEnded`, once the loop no longer watches it).
    package func closeDevice() {
        guard device != nil else { return }
        device = nil
        if case let .device(path) = source { source = .sysfs(why: "\(path) ended") }
    }

    /// A link's event: for a Wi-Fi or cellular link, the state of its switches read now; for a
    /// link that no longer is one, that it has none.
    package func events(for link: Link, kind: InterfaceKind) -> [NetworkEvent] {
        guard kind == .wifi || kind == .cellular else {
            return radioLinks.removeValue(forKey: link.index) == nil ? [] : [.radio(index: link.index, [])]
        }
        let entry = RadioLink(name: link.name, kind: kind, switches: switches(of: link.name, kind: kind))
        radioLinks[link.index] = entry
        return [.radio(index: link.index, entry.block)]
    }

    package func forget(index: Int32) { radioLinks.removeValue(forKey: index) }

    /// Reads what /dev/rfkill queued (up to `recordsPerTurn` records): the links whose state
    /// it changed, as facts. Never blocks.
    package func readDevice() -> [NetworkEvent] {
        guard let fd = device?.rawValue, !deviceEnded else { return [] }
        var changes: [RfkillEvent] = []
        for _ in 0..<Self.recordsPerTurn {
            let count = record.withUnsafeMutableBytes { raw in
                retryingOnInterrupt { read(fd, raw.baseAddress!, raw.count) }
            }
            if count < 0, errno == EAGAIN { break }
            guard count > 0 else {
                deviceEnded = true
                break
            }
            // A record the decoder refuses is skipped: the next read starts at the next record.
            let decoded = record.withUnsafeBytes { RfkillEvent(record: UnsafeRawBufferPointer(rebasing: $0[..<min(count, $0.count)])) }
            if let decoded, decoded.isNetworkRadio { changes.append(decoded) }
        }
        return apply(changes)
    }

    /// The device's records applied to the links they concern.
    package func apply(_ changes: [RfkillEvent]) -> [NetworkEvent] {
        guard !changes.isEmpty else { return [] }
        var touched: Set<Int32> = []
        let known = Set(radioLinks.values.flatMap(\.switches.keys))
        if changes.contains(where: { $0.operation == .add && !known.contains($0.index) }) {
            // A switch no link was seen with (a radio registered after its link): read each
            // radio link's switches again. A handful of links, and only when a switch appears.
            for (index, link) in radioLinks {
                radioLinks[index]?.switches = switches(of: link.name, kind: link.kind)
                touched.insert(index)
            }
        }
        for change in changes {
            for (index, link) in radioLinks where link.switches[change.index] != nil {
                radioLinks[index]?.switches[change.index] = change.operation == .remove ? nil : change.block
                touched.insert(index)
            }
        }
        return touched.sorted().compactMap { index in radioLinks[index].map { .radio(index: index, $0.block) } }
    }

    /// A link's switches as sysfs shows them now, by index (the first of a repeated index wins).
    private func switches(of name: String, kind: InterfaceKind) -> [UInt32: RadioBlock] {
        Dictionary(sysfs.radioSwitches(forInterface: name, kind: kind).map { ($0.index, $0.block) }) { first, _ in first }
    }
}
