import Testing
@testable import Reachability

/// `reachctl why`'s renderings: the JSON keys scripts rely on, in their order, and the text an
/// administrator reads (the broken layer upper case, more facts under the first, the fix last).
@Suite struct ExplanationOutputTests {
    static let sample = Explanation(target: "", uid: 1000, layers: [
        .init(name: .radio, status: .ok, evidence: ["eth0: no radio switched off"]),
        .init(name: .link, status: .broken, evidence: ["eth0: up, no carrier, operstate lowerlayerdown", "second fact"], fix: "plug it in"),
        .init(name: .address, status: .ok, evidence: []),
        .init(name: .gateway, status: .unknown, evidence: ["no route: no gateway to look at"]),
        .init(name: .route, status: .broken, evidence: ["none"], fix: "add one"),
        .init(name: .firewall, status: .unknown, evidence: ["w"]),
        .init(name: .dns, status: .ok, evidence: ["x"]),
        .init(name: .traffic, status: .unknown, evidence: ["y"]),
        .init(name: .portal, status: .unknown, evidence: ["z"]),
    ])

    @Test func json_hasStableKeysInOrder_andTheFirstBrokenLayer() {
        let text = Self.sample.json.serialized()
        #expect(text.hasPrefix(#"{"target":"","uid":1000,"brokenLayer":"link","layers":[{"layer":"radio","status":"ok","evidence":["eth0: no radio switched off"],"fix":""},"#), "\(text)")
        #expect(text.contains(#"{"layer":"link","status":"broken","evidence":["eth0: up, no carrier, operstate lowerlayerdown","second fact"],"fix":"plug it in"}"#))
        var fine = Self.sample
        fine.layers = fine.layers.map { Explanation.Layer(name: $0.name, status: $0.status == .broken ? .ok : $0.status, evidence: $0.evidence) }
        fine.uid = nil
        #expect(fine.json.serialized().hasPrefix(#"{"target":"","uid":null,"brokenLayer":"","#))
    }

    @Test func text_namesTheFirstBrokenLayer_andItsFix() {
        let lines = renderExplanation(Self.sample).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines == [
            "this host (as uid 1000): broken at the link layer",
            "  radio     ok       eth0: no radio switched off",
            "  link      BROKEN   eth0: up, no carrier, operstate lowerlayerdown",
            "                     second fact",
            "  address   ok",
            "  gateway   unknown  no route: no gateway to look at",
            "  route     BROKEN   none",
            "  firewall  unknown  w",
            "  dns       ok       x",
            "  traffic   unknown  y",
            "  portal    unknown  z",
            "Fix: plug it in",
        ], "\(lines)")
    }

    @Test func aHostNamesLookup_replacesTheDNSLayer() {
        let timedOut = Self.sample.resolving(CheckResult(target: "example.org", reason: .dnsTimeout, message: "no answer within 300ms"))
        #expect(timedOut.target == "example.org")
        #expect(timedOut[.dns]?.status == .broken && timedOut[.dns]?.evidence == ["example.org: no answer within 300ms"])
        let found = Self.sample.resolving(CheckResult(target: "example.org", addresses: [IPAddress("192.0.2.7")!]))
        #expect(found[.dns]?.status == .ok && found[.dns]?.evidence == ["example.org is 192.0.2.7"])
        #expect(found.layers.map(\.name) == Explanation.hostLayers)
    }
}
