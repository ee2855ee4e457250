import CNetlink
#if canImport(Glibc)
import Glibc
#endif

/// Why a poll of the host's TCP sockets failed. The poll is lost, nothing else: the next one
/// starts afresh.
package enum SocketDiagError: Error, Hashable, Sendable, CustomStringConvertible {
    case system(SystemError)
    /// The kernel's answer did not decode.
    case decoding(SocketDiagDecodingError)
    /// The kernel refused the dump (NLMSG_ERROR with this errno, positive).
    case kernel(errno: Int32)
    /// A datagram larger than the receive buffer (it cannot happen with the 64 KiB buffer: the
    /// kernel fills dump datagrams up to 32 KiB).
    case truncatedDatagram(bytes: Int)
    /// `dump(timeout:)` gave up before NLMSG_DONE.
    case timedOut

    package var description: String {
        switch self {
        case .system(let error): "\(error)"
        case .decoding(let error): "\(error)"
        case .kernel(let code): "sock_diag dump refused: \(String(cString: strerror(code)))"
        case .truncatedDatagram(let bytes): "sock_diag datagram of \(bytes) bytes truncated"
        case .timedOut: "sock_diag dump timed out"
        }
    }
}

/// Dumps the host's TCP sockets (IPv4, then IPv6) over sock_diag, driven by readability: the
/// caller's loop watches `fileDescriptor`, calls `start()` when a poll is due and `readable()`
/// whenever the descriptor is readable, until it returns the samples. Never blocks, never waits.
///
/// The two families are two dumps, one after the other, on one socket: the kernel runs one dump
/// per socket at a time (a second request while one runs fails with EBUSY).
package struct TCPSocketDumper: ~Copyable {
    /// How the sockets are asked for.
    package enum Request: Sendable {
        /// `inet_diag_req_v2` (SOCK_DIAG_BY_FAMILY), AF_INET then AF_INET6: two dumps.
        case perFamily
        /// TCPDIAG_GETSOCK, inet_diag's original request: one dump of both families, one walk of
        /// the kernel's hash table instead of two (half the fixed cost of a poll).
        case bothFamilies
    }

    package let request: Request
    private let socket: NetlinkSocket
    private var buffer: [UInt8]
    private var sequence: UInt32 = 0
    /// The family being dumped (.ipv6 for the last or only dump), nil while idle.
    private var family: AddressFamily?
    private var collected: [TCPSocketSample] = []

    /// Opens the sock_diag socket, in the network namespace at `namespacePath` when given.
    package init(namespacePath: String? = nil, request: Request = .perFamily) throws(SystemError) {
        self.request = request
        socket = try NetlinkSocket(nonBlocking: true, namespacePath: namespacePath, sockDiag: true)
        // Dump datagrams are at most 32 KiB (the kernel's cap on one dump skb); twice that leaves
        // room for any future growth and is noticed (MSG_TRUNC) rather than trusted if passed.
        buffer = [UInt8](repeating: 0, count: 64 << 10)
    }

    /// The descriptor to watch for readability. Owned by the dumper: never close it.
    package var fileDescriptor: Int32 { socket.fd }

    /// Whether a dump is under way (`start()` was called and the samples not yet returned).
    package var isDumping: Bool { family != nil }

    /// Starts a poll: sends the IPv4 dump request. A dump still under way is abandoned: what is
    /// queued of it is read and dropped first (the kernel finishes a dump only as it is read).
    package mutating func start() throws(SocketDiagError) {
        if family != nil { drain() }
        collected.removeAll(keepingCapacity: true)
        try send(first: true)
    }

    /// Reads everything readable now. Returns the samples of both families when the IPv6 dump's
    /// NLMSG_DONE arrived, nil while more is to come (or no dump is under way). On an error the
    /// dump is abandoned; the next `start()` begins afresh.
    package mutating func readable() throws(SocketDiagError) -> [TCPSocketSample]? {
        guard family != nil else {
            drain()
            return nil
        }
        while true {
            let reception: NetlinkSocket.Reception
            do {
                reception = try socket.receive(into: &buffer)
            } catch {
                family = nil
                throw .system(error)
            }
            switch reception {
            case .wouldBlock: return nil
            case .foreign: continue
            case let .datagram(count, truncated):
                if truncated {
                    abandon()
                    throw .truncatedDatagram(bytes: count)
                }
                if let samples = try consume(count: count) { return samples }
            }
        }
    }

    /// Convenience for tests, benchmarks and one-shot tools (never for an event loop): starts a
    /// poll and waits in poll(2) until it completes or `timeout` passes.
    package mutating func dump(timeout: Duration = .seconds(5)) throws(SocketDiagError) -> [TCPSocketSample] {
        try start()
        let deadline = ContinuousClock.now + timeout
        while true {
            if let samples = try readable() { return samples }
            let left = deadline - ContinuousClock.now
            guard left > .zero else {
                abandon()
                throw .timedOut
            }
            var descriptor = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: left.millisecondsRoundedUp)
            _ = retryingOnInterrupt { Glibc.poll(&descriptor, 1, milliseconds) }
        }
    }

    // MARK: private

    /// Sends the first (IPv4, or both families) or the second (IPv6) dump request.
    private mutating func send(first: Bool) throws(SocketDiagError) {
        sequence &+= 1
        if sequence == 0 { sequence = 1 }  // sequence 0 is the kernel's notifications'
        let bytes: [UInt8]
        switch (request, first) {
        case (.bothFamilies, _):
            family = .ipv6
            bytes = SocketDiagRequest.tcpDumpBothFamilies(sequence: sequence)
        case (.perFamily, true):
            family = .ipv4
            bytes = SocketDiagRequest.tcpDump(family: .ipv4, sequence: sequence)
        case (.perFamily, false):
            family = .ipv6
            bytes = SocketDiagRequest.tcpDump(family: .ipv6, sequence: sequence)
        }
        do {
            try socket.send(bytes)
        } catch {
            family = nil
            throw .system(error)
        }
    }

    /// Takes one datagram's messages; the samples when the whole poll is complete.
    private mutating func consume(count: Int) throws(SocketDiagError) -> [TCPSocketSample]? {
        var failure: SocketDiagError?
        var finished = false
        let sequence = self.sequence
        buffer.withUnsafeBytes { raw in
            SocketDiagDecoder.decode(UnsafeRawBufferPointer(rebasing: raw[0..<count])) { header, result in
                guard failure == nil, !finished else { return }
                switch result {
                case .failure(let error):
                    failure = .decoding(error)
                case .success(let message):
                    // A leftover of an abandoned dump carries an older sequence number.
                    guard header.sequence == sequence else { return }
                    switch message {
                    case .socket(let sample): collected.append(sample)
                    case .done: finished = true
                    case .error(let code): if code != 0 { failure = .kernel(errno: -code) }
                    case .ignored: break
                    }
                }
            }
        }
        if let failure {
            abandon()
            throw failure
        }
        guard finished else { return nil }
        if family == .ipv4 {
            try send(first: false)
            return nil
        }
        family = nil
        let samples = collected
        collected.removeAll(keepingCapacity: true)
        return samples
    }

    private mutating func abandon() {
        drain()
        family = nil
        collected.removeAll(keepingCapacity: true)
    }

    /// Reads and drops everything queued (the rest of an abandoned dump).
    private mutating func drain() {
        while true {
            guard let reception = try? socket.receive(into: &buffer) else { return }
            if case .wouldBlock = reception { return }
        }
    }
}
