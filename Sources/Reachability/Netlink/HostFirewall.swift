#if canImport(Glibc)
import Glibc
#endif

/// What the host's own nftables ruleset does with the first packet of a connection this host
/// would open (`reachctl check|why --port`, run as root): the packet leaves through the
/// interface and from the source the kernel's route lookup gives, as `uid`'s traffic.
package enum HostFirewall {
    /// How the question was asked: by TCP or UDP, to which port.
    package struct Question: Sendable {
        package var destination: IPAddress
        package var udp: Bool
        package var port: UInt16?
        package var uid: UInt32?

        package init(destination: IPAddress, udp: Bool = false, port: UInt16? = nil, uid: UInt32? = nil) {
            self.destination = destination
            self.udp = udp
            self.port = port
            self.uid = uid
        }

        /// "tcp port 8080 to 198.51.100.2", "tcp to 198.51.100.2" without a port.
        package var phrase: String {
            (udp ? "udp" : "tcp") + (port.map { " port \($0)" } ?? "") + " to \(destination)"
        }
    }

    package static func judge(_ question: Question, namespacePath: String? = nil) throws(NftablesReader.Refusal) -> FirewallJudgement {
        let ruleset = try NftablesReader.read(namespacePath: namespacePath)
        var packet = FirewallPacket(destination: question.destination, transport: question.udp ? 17 : 6, port: question.port, uid: question.uid)
        // The interface and source the kernel would choose; without them the rules that match
        // on them may refuse rather than certainly do.
        if let query = try? RouteQuery(namespacePath: namespacePath),
            case let .route(route)? = try? query.lookup(question.destination, uid: question.uid)
        {
            packet.source = route.preferredSource
            if let index = route.nextHops.first?.interfaceIndex, let name = InterfaceNames.name(of: index) { packet.outputInterface = (index, name) }
        }
        return FirewallEvaluation(ruleset: ruleset, packet: packet).judge()
    }
}
