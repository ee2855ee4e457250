import CAres
#if canImport(Glibc)
import Glibc
#endif

extension AresLookup {
    /// c-ares' socket calls, passed straight to the kernel, watching for refusals on the way.
    ///
    /// c-ares 1.18 does not report a refusal as such. A REFUSED answer makes it try the next
    /// server (and the same one again on the next round), and when every try has been refused it
    /// reports ARES_ECONNREFUSED, "Could not contact DNS servers": the same status as for a
    /// server it never reached. ICMP port unreachable is worse: the error pending on the
    /// connected UDP socket is often consumed by the send of the AAAA query, which c-ares takes
    /// as a failed send and retries on its timer, so the lookup ends in ETIMEOUT after rounds of
    /// retries. `ARES_FLAG_NOCHECKRESP` would give ARES_EREFUSED at once for a REFUSED answer,
    /// but it also stops c-ares from asking the next nameserver after SERVFAIL or REFUSED, which
    /// glibc does; and it does nothing for ICMP. So the lookup notes here, per server, a REFUSED
    /// answer (the DNS header's RCODE 5) or ECONNREFUSED from a send or receive, and the resolver
    /// ends the lookup as soon as every nameserver of its channel has refused (`refusal`).
    package enum SocketCalls {
        /// c-ares keeps the pointer, so the table lives for the process. Written once here, then
        /// only read (by c-ares, on whichever loop thread runs a lookup): safe to share.
        package nonisolated(unsafe) static let table: UnsafeMutablePointer<ares_socket_functions> = {
            let table = UnsafeMutablePointer<ares_socket_functions>.allocate(capacity: 1)
            table.initialize(to: ares_socket_functions(
                asocket: { domain, type, proto, _ in
                    // c-ares leaves sockets it did not open as they come: without O_NONBLOCK a
                    // read with nothing queued would block the loop (seen: a hung recvfrom).
                    ResolverSocket.open(domain: domain, type: type, protocol: proto)
                },
                aclose: { fd, context in
                    let state = AresLookup.state(context)
                    state.peers[fd] = nil
                    // While the number is still this socket's: once closed, the next socket
                    // opened (a probe's, anyone's) may get it.
                    state.willClose?(fd)
                    return close(fd)
                },
                aconnect: { fd, address, length, context in
                    if let address, let server = IPAddress.fromSocketAddress(UnsafeRawBufferPointer(start: address, count: Int(length)))?.address {
                        AresLookup.state(context).peers[fd] = (server, ResolverSocket.isDatagram(fd))
                    }
                    return connect(fd, address, length)
                },
                arecvfrom: { fd, buffer, length, flags, from, fromLength, context in
                    let count = recvfrom(fd, buffer, length, flags, from, fromLength)
                    let error = errno
                    let state = AresLookup.state(context)
                    if let peer = state.peers[fd] {
                        if count < 0, error == ECONNREFUSED {
                            state.refusals[peer.server] = (refusedByICMP, nil)
                        } else if peer.datagram, count >= 4, let buffer,
                            buffer.load(fromByteOffset: 3, as: UInt8.self) & 0x0F == refusedCode
                        {
                            state.noteRefusedAnswer(
                                from: peer.server, type: questionType(UnsafeRawBufferPointer(start: buffer, count: count)))
                        }
                    }
                    errno = error
                    return count
                },
                asendv: { fd, vector, count, context in
                    let sent = writev(fd, vector, count)
                    let error = errno
                    let state = AresLookup.state(context)
                    if sent < 0, error == ECONNREFUSED, let peer = state.peers[fd] {
                        state.refusals[peer.server] = (refusedByICMP, nil)
                    }
                    errno = error
                    return sent
                }))
            return table
        }()

        /// RCODE 5, REFUSED (RFC 1035 4.1.1).
        package static let refusedCode: UInt8 = 5

        /// The QTYPE of a DNS message's first question (RFC 1035 4.1.2: QNAME's labels after the
        /// 12-byte header, then QTYPE); nil when the message has no question or ends early.
        package static func questionType(_ message: UnsafeRawBufferPointer) -> UInt16? {
            guard message.count >= 12, message[4] != 0 || message[5] != 0 else { return nil }
            var index = 12
            while index < message.count {
                let length = Int(message[index])
                if length == 0 { index += 1; break }
                // A compression pointer (two bytes) ends the name; a question rarely has one.
                if length & 0xC0 == 0xC0 { index += 2; break }
                index += 1 + length
            }
            guard index + 2 <= message.count else { return nil }
            return UInt16(message[index]) << 8 | UInt16(message[index + 1])
        }
        package static let refusedByAnswer = "refused the query (REFUSED)"
        package static let refusedByICMP = "refused the connection (ICMP port unreachable: nothing listens on its port 53)"
    }

    /// DNS record types of the two families a lookup asks for (RFC 1035, RFC 3596).
    package static let typeA: UInt16 = 1
    package static let typeAAAA: UInt16 = 28

    fileprivate static func state(_ context: UnsafeMutableRawPointer?) -> State {
        Unmanaged<State>.fromOpaque(context!).takeUnretainedValue()
    }
}

extension AresLookup.State {
    /// A REFUSED answer from `server` to a query of `type` (nil: unknown, taken as every type).
    fileprivate func noteRefusedAnswer(from server: IPAddress, type: UInt16?) {
        var entry = refusals[server] ?? (AresLookup.SocketCalls.refusedByAnswer, [])
        if let type, entry.types != nil {
            entry.types!.insert(type)
        } else {
            entry.types = nil
        }
        refusals[server] = entry
    }
}
