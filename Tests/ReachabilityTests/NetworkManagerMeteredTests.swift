import Foundation
import Testing
@testable import Reachability

/// NetworkManager's `Metered` as the Engine ranks it among reachd's own facts: reachd.conf first,
/// a cellular kind always, then NetworkManager's explicit yes or no (the user's
/// `connection.metered`), then reachd's guesses, then NetworkManager's guess.
struct NetworkManagerMeteredTests {
    static func said(_ metered: NetworkManagerMetered, on name: String = "eth0") -> NetworkEvent {
        .networkManagerMetered(interface: name, metered)
    }

    /// What applying `events` showed moving; fails the test when nothing did.
    static func change(_ state: inout NetworkState, _ events: [NetworkEvent]) throws -> ReachabilityChange {
        let applied = state.apply(events)
        return try #require(applied)
    }

    static let hotspot = (address: "172.20.10.3", length: UInt8(28), gateway: "172.20.10.1")

    @Test func anExplicitYesIsItsOwnReasonAndForgettingItUndoesIt() throws {
        var state = try ExpensiveReasonTests.uplink()
        let yes = try Self.change(&state, [Self.said(.yes)])
        #expect(yes.host.expensiveReason == .networkManager && yes.host.flags.contains(.isExpensive))
        #expect(yes.changedInterfaces.first { $0.name == "eth0" }?.expensiveReason == .networkManager)
        #expect(renderStatus(state.snapshot).contains("\nMetered: yes (NetworkManager's connection setting)\n"), "\(renderStatus(state.snapshot))")
        #expect(state.snapshot.json.serialized().contains("\"expensiveReason\":\"networkManager\""))
        #expect(NetworkManagerValues(host: state.host, interfaces: state.snapshot.interfaces).metered == NetworkManagerValues.meteredYes)
        // The same word again moves nothing; NetworkManager going away (unknown) does.
        #expect(state.apply([Self.said(.yes)]) == nil)
        let gone = try Self.change(&state, [Self.said(.unknown)])
        #expect(gone.host.expensiveReason == nil && !gone.host.flags.contains(.isExpensive))
        #expect(state.meteredHints.networkManager.isEmpty)
    }

    @Test func anExplicitNoSilencesReachdsGuessesButNotACellularKind() throws {
        var hotspot = try ExpensiveReasonTests.uplink(address: Self.hotspot.address, length: Self.hotspot.length, gateway: Self.hotspot.gateway)
        #expect(hotspot.host.expensiveReason == .hotspot)
        let no = try Self.change(&hotspot, [Self.said(.no)])
        #expect(no.host.expensiveReason == nil && !no.host.flags.contains(.isExpensive))
        var tether = try ExpensiveReasonTests.uplink(driver: "ipheth")
        _ = tether.apply([Self.said(.no)])
        #expect(tether.host.expensiveReason == nil)
        var lease = try ExpensiveReasonTests.uplink()
        _ = lease.apply([.dhcpMetered(index: 2, true), Self.said(.no)])
        #expect(lease.host.expensiveReason == nil)
        var modem = try ExpensiveReasonTests.uplink(deviceType: "wwan")
        _ = modem.apply([Self.said(.no)])
        #expect(modem.host.expensiveReason == .cellular)
    }

    @Test func reachdConfWinsBothWays() throws {
        var configured = try ExpensiveReasonTests.uplink(Classifier(rules: [InterfaceRule(pattern: "eth0", metered: true)]))
        _ = configured.apply([Self.said(.no)])
        #expect(configured.host.expensiveReason == .configuration)
        var unmetered = try ExpensiveReasonTests.uplink(Classifier(rules: [InterfaceRule(pattern: "eth0", metered: false)]))
        _ = unmetered.apply([Self.said(.yes)])
        #expect(unmetered.host.expensiveReason == nil && !unmetered.host.flags.contains(.isExpensive))
        // A reload that drops the rule lets NetworkManager's word show.
        let reclassified = unmetered.reclassify(with: Classifier())
        let reload = try #require(reclassified)
        #expect(reload.host.expensiveReason == .networkManager)
    }

    @Test func aGuessRanksBelowReachdsOwnFactsAndGuessNoSaysNothing() throws {
        var plain = try ExpensiveReasonTests.uplink()
        let guess = try Self.change(&plain, [Self.said(.guessYes)])
        #expect(guess.host.expensiveReason == .networkManagerGuess && guess.host.flags.contains(.isExpensive))
        #expect(NetworkManagerValues(host: plain.host, interfaces: plain.snapshot.interfaces).metered == NetworkManagerValues.meteredGuessYes)
        var tether = try ExpensiveReasonTests.uplink(driver: "rndis_host")
        _ = tether.apply([Self.said(.guessYes)])
        #expect(tether.host.expensiveReason == .tether)
        var hotspot = try ExpensiveReasonTests.uplink(address: Self.hotspot.address, length: Self.hotspot.length, gateway: Self.hotspot.gateway)
        #expect(hotspot.apply([Self.said(.guessNo)]) == nil, "GUESS_NO is what NetworkManager says of any link: no news")
        #expect(hotspot.host.expensiveReason == .hotspot)
        let explicit = try Self.change(&hotspot, [Self.said(.yes)])
        #expect(explicit.host.expensiveReason == .networkManager, "the user's setting names the reason before reachd's guess")
    }

    @Test func theWordIsByNameSoItHoldsForALinkThatComesLaterOrIsRenamed() throws {
        var state = try ExpensiveReasonTests.uplink()
        #expect(state.apply([Self.said(.yes, on: "wlan0")]) == nil, "no such link: nothing shown moves")
        // eth0 renamed wlan0 (as udev does): the word follows the name.
        let renamed = try Self.change(&state, [.link(Fact.ethernet(2, "wlan0"), device: DeviceFacts())])
        #expect(renamed.host.expensiveReason == .networkManager)
        let back = try Self.change(&state, [.link(Fact.ethernet(2, "eth0"), device: DeviceFacts())])
        #expect(back.host.expensiveReason == nil)
    }

    @Test func aBridgeOrOtherLinkIsJudgedByItsOwnName() throws {
        var state = try ExpensiveReasonTests.uplink()
        _ = state.apply([Self.said(.yes, on: "eth1")])
        #expect(state.host.expensiveReason == nil)
        #expect(state.snapshot.interfaces.allSatisfy { $0.expensiveReason == nil })
    }
}
