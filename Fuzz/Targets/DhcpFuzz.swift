// libFuzzer target: a lease file of dhcpcd's (`DhcpcdLeases`): the first byte picks the family
// (even: a DHCPv4 message, IFNAME.lease; odd: a DHCPv6 one, IFNAME.lease6), the rest is the
// file. The portal's value, when one is found, is then validated as reachd validates it.
//
// Oracles besides "no crash" (the parser indexes arrays: a read past the end traps): the same
// bytes give the same answer twice; a value found is no longer than the message and, for
// DHCPv6, bytes the message holds; a refusal's reason stays under 200 bytes.
@testable import Reachability

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDhcp(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let message = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let six = data[0] & 1 == 1
    let read = { six ? DhcpcdLeases.portalOption(dhcpv6: message) : DhcpcdLeases.portalOption(dhcpv4: message) }
    let first = read()
    require(first == read(), "the same bytes read twice gave two answers")
    switch first {
    case let .success(value?):
        require(value.count <= message.count, "a value of \(value.count) bytes from \(message.count)")
        if six {
            require(value.isEmpty || (0...(message.count - value.count)).contains { message[$0..<($0 + value.count)].elementsEqual(value) },
                    "a DHCPv6 value the message does not hold")
        }
        _ = AnnouncedPortal.uri(fromOptionValue: value)
    case .success(nil): break
    case let .failure(malformed): require(malformed.reason.utf8.count < 200, "a reason of \(malformed.reason.utf8.count) bytes")
    }
    return 0
}
