import Testing
@testable import Reachability

/// One rule for watches, host checks in flight and running lookups: a total, a quarter of it
/// kept for the system, and each other owner's share.
@Suite struct QuotaTests {
    @Test func theReserveIsAQuarterAndAShareHalfOfWhatTheOthersMayUse() {
        #expect([64, 8, 2, 1, 0].map { Quota(total: $0) }.map { [$0.reserve, $0.perOwner] }
            == [[16, 24], [2, 3], [1, 1], [0, 1], [0, 1]])
        let watches = Quota(total: 4096, perOwner: 2048)
        #expect(watches.reserve == 1024 && watches.perOwner == 2048)
    }

    @Test func eachBoundRefusesByName() {
        let quota = Quota(total: 8)  // reserve 2, share 3
        #expect(quota.refusal(system: false, held: 0, ofOwner: 0, byOthers: 0) == nil)
        #expect(quota.refusal(system: false, held: 3, ofOwner: 3, byOthers: 3) == .owner)
        #expect(quota.refusal(system: false, held: 6, ofOwner: 0, byOthers: 6) == .reserve)
        #expect(quota.refusal(system: false, held: 8, ofOwner: 0, byOthers: 6) == .total)
        // The system takes the reserve and is held by no share, but never past the total.
        #expect(quota.refusal(system: true, held: 6, ofOwner: 5, byOthers: 6) == nil)
        #expect(quota.refusal(system: true, held: 8, ofOwner: 2, byOthers: 6) == .total)
    }

    /// The ledger the three count through: what is taken is refused by the same rule, and every
    /// release undoes its take, so once all is given back nothing reads as held.
    @Test func theLedgerHoldsWhatIsTakenAndReadsZeroOnceAllIsGivenBack() {
        var ledger = QuotaLedger<UInt32>(Quota(total: 8)) { $0 == 0 }  // reserve 2, share 3
        for _ in 0..<3 { ledger.take(1000) }
        #expect(ledger.refusal(for: 1000) == .owner)
        for _ in 0..<3 { ledger.take(1001) }
        #expect(ledger.refusal(for: 1002) == .reserve && ledger.heldByOthers == 6)
        ledger.take(0)
        ledger.take(0)
        #expect(ledger.refusal(for: 0) == .total && ledger.held == 8 && ledger.held(by: 0) == 0)
        // A reload below what is held takes nothing back: new takes meet the new bounds.
        ledger.quota = Quota(total: 4)
        #expect(ledger.held == 8 && ledger.refusal(for: 0) == .total)
        for owner: UInt32 in [1000, 1001, 0, 1000, 1001, 0, 1000, 1001] { ledger.release(owner) }
        #expect(ledger.held == 0 && ledger.heldByOthers == 0 && ledger.held(by: 1000) == 0 && ledger.held(by: 1001) == 0)
        #expect(ledger.refusal(for: 1000) == nil)
    }
}
