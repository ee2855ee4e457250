// libFuzzer target: one NETLINK_NETFILTER datagram of nf_tables, as NftablesReader hands it to
// NftablesDecoder, the ruleset its messages make (`NftablesReader.ruleset`), and that ruleset
// judged for a few packets by the pure FirewallEvaluation.
//
// The bytes come from the kernel, only when root asks `reachctl check --port`, but the decoder
// must turn any bytes into messages or typed errors, never a trap, and the evaluation must end
// whatever the rules say (jumps in rings, gotos past the depth limit, registers never loaded,
// sets that are not there). Oracles besides "no crash": an error's description is short; the
// judgement is a pure function (the same ruleset and packet judge the same twice); a ruleset
// with no base chain of the output or postrouting hook lets everything leave.
@testable import Reachability

let fuzzPackets: [FirewallPacket] = [
    FirewallPacket(destination: IPAddress("192.0.2.7")!, transport: 6, port: 443, source: IPAddress("192.0.2.2"),
                   outputInterface: (2, "eth0"), uid: 1000),
    FirewallPacket(destination: IPAddress("2001:db8::7")!, transport: 17, port: 53),
    FirewallPacket(destination: IPAddress("198.51.100.1")!, transport: 6, port: nil, outputInterface: (3, "wg0"), uid: 0),
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNftables(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let datagram = Array(UnsafeBufferPointer(start: data, count: size))
    let decoded = NftablesDecoder.decode(datagram)
    for error in decoded.errors { require(error.description.utf8.count < 200, "an error's description of \(error.description.utf8.count) bytes") }
    let ruleset = NftablesReader.ruleset(decoded.messages)
    let hooked = ruleset.chains.contains { $0.hook.map { $0.number == 3 || $0.number == 4 } ?? false }
    for packet in fuzzPackets {
        let judgement = FirewallEvaluation(ruleset: ruleset, packet: packet).judge()
        require(judgement == FirewallEvaluation(ruleset: ruleset, packet: packet).judge(), "the same ruleset judged twice differently")
        if !hooked { require(judgement == .leaves, "no output or postrouting chain, yet \(judgement)") }
    }
    return 0
}
