import Testing
@testable import Reachability

/// issue 42: where a rename suffices for NWPathMonitor code, it does: Apple's `.wiredEthernet`
/// and `NWInterface.type` are spelled as Apple spells them, in expressions and in patterns.
@Suite struct PortingNamesTests {
    @Test func nwPathMonitorsNamesPortAsWritten() {
        #expect(InterfaceKind.wiredEthernet == .wired)
        let interface = Path.Interface(name: "eth0", index: 2, kind: .wired)
        #expect(interface.type == .wiredEthernet)
        switch interface.type {
        case .wiredEthernet: break
        default: Issue.record("a wired interface's type matches .wiredEthernet: \(interface.type)")
        }
        let monitor = PathMonitor(requiredInterfaceType: .wiredEthernet, bus: nil)
        #expect(monitor.requiredInterfaceType == .wired)
    }
}
