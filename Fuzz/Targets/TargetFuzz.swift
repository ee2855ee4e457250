// libFuzzer target: a check or watch target as a client writes it (CheckAddress, CheckHost,
// Watch, reachctl check), taken the way every entry point takes it: an address when
// `AddressTarget.looksLikeAddress` says so, parsed by `AddressTarget.parse`, else a host name
// checked by `HostName.validate` before it may go to DNS.
//
// These strings come from any local user over D-Bus. Oracles besides "no crash":
// - an accepted address prints (inet_ntop) to a text that parses back to the same address;
// - an accepted host name obeys the rules validate documents (length, labels, characters);
// - a refusal's message stays short whatever the input (a 100 KB target is not echoed whole);
// - `HostName.isNumericForm` agrees with glibc's inet_aton, whose forms it claims to recognise.
#if canImport(Glibc)
import Glibc
#endif
@testable import Reachability

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTarget(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    // sd-bus hands reachd valid UTF-8 only; reachctl's arguments are decoded the same way.
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)

    let parsed = AddressTarget.parse(text)
    switch parsed {
    case .success(let target): checkAccepted(target, text: text)
    case .failure(let error): checkMessage(error.description, for: text)
    }
    let validated = HostName.validate(text)
    switch validated {
    case .success(let name): checkAccepted(hostName: name)
    case .failure(let error): checkMessage(error.description, for: text)
    }
    // What an entry point does: one of the two, never DNS for something address-like.
    if AddressTarget.looksLikeAddress(text) {
        _ = AddressTarget.parse(text)
    } else if case .success = validated {
        require(!text.utf8.contains(UInt8(ascii: ":")), "a text with ':' would go to DNS")
    }
    checkNumericForm(text)
    return 0
}

private func checkAccepted(_ target: AddressTarget, text: String) {
    require(!text.utf8.contains(0), "an address with a NUL byte was accepted: \(text.debugDescription)")
    let printed = target.address.description
    require(IPAddress(printed) == target.address, "\(printed) does not parse back to the address of \(text.debugDescription)")
    require(target.address.unmappedV4 == nil, "an IPv4-mapped address was not taken as IPv4")
    if case .name(let name) = target.scope {
        require(AddressTarget.isInterfaceName(Substring(name)), "scope \(name.debugDescription) cannot name an interface")
    }
}

private func checkAccepted(hostName name: String) {
    let body = name.hasSuffix(".") ? String(name.dropLast()) : name
    require(!body.isEmpty && body.utf8.count <= HostName.maximumLength, "accepted host name of \(body.utf8.count) bytes")
    require(name.utf8.allSatisfy { $0 < 0x80 && $0 != 0 }, "accepted host name with non-ASCII or NUL: \(name.debugDescription)")
    for label in body.split(separator: ".", omittingEmptySubsequences: false) {
        require(!label.isEmpty && label.utf8.count <= HostName.maximumLabelLength, "bad label in accepted \(name)")
        require(!label.hasPrefix("-") && !label.hasSuffix("-"), "hyphen at a label's edge in accepted \(name)")
    }
    require(!HostName.isNumericForm(body), "accepted host name \(name) is a numeric IPv4 form")
}

/// The longest refusal a client may get back: the texts quote at most about 60 characters of
/// the target (or 253 for a name that passed the length check) plus a sentence.
private func checkMessage(_ message: String, for text: String) {
    require(message.utf8.count <= 1_000, "a \(text.utf8.count)-byte target got a \(message.utf8.count)-byte message")
}

/// `isNumericForm` must say yes exactly for what inet_aton accepts but is not a plain dotted quad,
/// for texts made only of the characters such forms use and signs (inet_aton also stops at
/// whitespace, which the other checks refuse anyway).
private func checkNumericForm(_ text: String) {
    guard !text.isEmpty, text.utf8.count <= 64,
        text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x2B || $0 == 0x2D || $0 == 0x78 || $0 == 0x58
            || ($0 >= 0x61 && $0 <= 0x66) || ($0 >= 0x41 && $0 <= 0x46) })
    else { return }
    var address = in_addr()
    let aton = inet_aton(text, &address) != 0
    var quad = in_addr()
    let dottedQuad = inet_pton(AF_INET, text, &quad) == 1
    let ours = HostName.isNumericForm(text)
    require(ours == (aton && !dottedQuad),
                 "isNumericForm(\(text.debugDescription)) is \(ours); inet_aton \(aton ? "accepts" : "refuses") it"
                     + (dottedQuad ? " (a dotted quad)" : ""))
}
