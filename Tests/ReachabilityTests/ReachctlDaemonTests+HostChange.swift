import Foundation
import Testing
@testable import Reachability

/// `reachctl monitor` says what each host change changed (`changed`) and when to rebind
/// (`rebind`): through reachd (its `HostChangeDescribed`) and in-process (the Engine's own
/// description), the same lines.
extension ReachctlDaemonTests {
    @Test(arguments: Mode.allCases)
    func monitorSaysWhatChangedAndWhenToRebind(_ mode: Mode) async throws {
        let ns = try Self.scenario()
        let far = try Self.farPeer(of: ns)
        let fixture = mode == .daemon ? try ReachdFixture(namespace: ns) : nil
        let json = try ReachctlProcess(["monitor", "--json"] + Self.source(mode, ns, fixture))
        defer { _ = json.terminate() }
        let text = try ReachctlProcess(["monitor", "--verbose"] + Self.source(mode, ns, fixture))
        defer { _ = text.terminate() }
        _ = try await json.waitForLines(1)
        _ = try await text.waitForLines(1)

        // A second address on the primary, not its source: a host change, nothing to rebind.
        try ns.ip("addr add 192.0.2.3/24 dev up0")
        var lines = try await json.waitForLines(2)
        let added = try Self.object(lines[1])
        #expect(added["changed"] as? [String] == ["addresses"], "\(lines)")
        #expect(added["rebind"] as? Bool == false)
        #expect(added["state"] as? String == "online")

        // Carrier lost: the source went away.
        try far.ip("link set up0p down")
        lines = try await json.waitForLines(3)
        let lost = try Self.object(lines[2])
        #expect(lost["state"] as? String == "offline", "\(lines)")
        #expect(lost["rebind"] as? Bool == true)
        let lostChanged = lost["changed"] as? [String] ?? []
        #expect(lostChanged.contains("state") && lostChanged.contains("sourceAddress"), "\(lostChanged)")

        // Back: online again from no source, nothing to rebind.
        try far.ip("link set up0p up")
        lines = try await json.waitForLines(4)
        let back = try Self.object(lines[3])
        #expect(back["state"] as? String == "online", "\(lines)")
        #expect(back["rebind"] as? Bool == false)
        #expect((back["changed"] as? [String])?.contains("sourceAddress") == true)

        try await Task.sleep(for: .milliseconds(300))
        #expect(json.output.count == 4, "one line per host change: \(json.output)")
        // The text lines: (rebind) on the offline one alone, what moved in braces.
        let textLines = try await text.waitForLines(4)
        #expect(textLines.count == 4, "\(textLines)")
        #expect(textLines.filter { $0.contains("(rebind)") }.count == 1, "\(textLines)")
        #expect(textLines[2].contains("offline") && textLines[2].contains("(rebind) {state,"), "\(textLines)")
        #expect(textLines[1].contains("{addresses}"), "\(textLines)")
        #expect(json.terminate() == 0)
    }
}
