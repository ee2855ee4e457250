/// A TCP state in the kernel's numbering (`TCP_ESTABLISHED` 1, `TCP_SYN_SENT` 2, ...). A struct
/// over the raw value, not an enum: the kernel may name states this code never heard of.
package struct TCPState: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let established = TCPState(rawValue: 1)
    public static let synSent = TCPState(rawValue: 2)
    public static let synReceived = TCPState(rawValue: 3)
    public static let finWait1 = TCPState(rawValue: 4)
    /// A socket closed and gone: the state of a destroy event's last counters.
    public static let closed = TCPState(rawValue: 7)
    public static let closeWait = TCPState(rawValue: 8)
    public static let lastAck = TCPState(rawValue: 9)
    public static let listen = TCPState(rawValue: 10)
    public static let closing = TCPState(rawValue: 11)

    public var description: String {
        switch self {
        case .established: "established"
        case .synSent: "syn-sent"
        case .synReceived: "syn-received"
        case .finWait1: "fin-wait-1"
        case .closed: "closed"
        case .closeWait: "close-wait"
        case .lastAck: "last-ack"
        case .listen: "listen"
        case .closing: "closing"
        default: "state-\(rawValue)"
        }
    }
}

/// The counters of one TCP socket that stall detection reads (`struct tcp_info`, from sock_diag's
/// INET_DIAG_INFO). Counters only ever grow (and wrap at 2^32); the times are how long ago.
package struct TCPCounters: Hashable, Sendable {
    /// `tcpi_segs_out`: segments sent, retransmissions included (RFC 4898 tcpEStatsPerfSegsOut).
    public var segmentsOut: UInt32
    /// `tcpi_segs_in`: segments received, pure ACKs included (tcpEStatsPerfSegsIn).
    public var segmentsIn: UInt32
    /// `tcpi_total_retrans`: segments retransmitted over the socket's life.
    public var totalRetransmits: UInt32
    /// `tcpi_retransmits`: retransmission timeouts in a row without progress (0 when healthy).
    public var consecutiveTimeouts: UInt8
    /// `tcpi_rto`: the retransmission timeout now, in microseconds.
    public var retransmissionTimeoutMicroseconds: UInt32
    /// `tcpi_last_data_recv`: milliseconds since data last arrived.
    public var millisecondsSinceDataReceived: UInt32
    /// `tcpi_last_ack_recv`: milliseconds since an ACK last arrived.
    public var millisecondsSinceAckReceived: UInt32
    /// `tcpi_last_data_sent`: milliseconds since new data was last sent (retransmissions aside).
    public var millisecondsSinceDataSent: UInt32
    /// `tcpi_unacked`: segments sent and not yet acknowledged (a FIN counts), 0 when all arrived.
    public var unacknowledged: UInt32
    /// Times in a row the kernel tried to send data the socket holds queued, with nothing in
    /// flight and the peer's window open, and the host itself refused it (a drop rule of its
    /// output hook: the send fails before the segment leaves, so nothing is ever unacknowledged
    /// and no retransmission timeout runs; the kernel backs off instead). 0 otherwise, and on
    /// kernels before 5.4, whose tcp_info has no send window.
    public var sendsRefused: UInt8 = 0
    /// `tcpi_bytes_acked` plus `tcpi_bytes_received`: grows only when the peer acknowledges new
    /// data or new data arrives. A segment the peer sends again because the host's ACKs do not
    /// reach it (a wall of the host's own output, a path dead one way) moves `segmentsIn` and the
    /// time since an ACK arrived, never this.
    public var progress: UInt64 = 0
    /// `tcpi_data_segs_in` (Linux 4.6): segments received that carried data, a segment the peer
    /// sent again included (0 on older kernels: no evidence of it).
    public var dataSegmentsIn: UInt32 = 0

    public init(
        segmentsOut: UInt32, segmentsIn: UInt32, totalRetransmits: UInt32, consecutiveTimeouts: UInt8 = 0,
        retransmissionTimeoutMicroseconds: UInt32 = 0, millisecondsSinceDataReceived: UInt32 = 0,
        millisecondsSinceAckReceived: UInt32 = 0, millisecondsSinceDataSent: UInt32 = 0, unacknowledged: UInt32 = 0
    ) {
        self.segmentsOut = segmentsOut
        self.segmentsIn = segmentsIn
        self.totalRetransmits = totalRetransmits
        self.consecutiveTimeouts = consecutiveTimeouts
        self.retransmissionTimeoutMicroseconds = retransmissionTimeoutMicroseconds
        self.millisecondsSinceDataReceived = millisecondsSinceDataReceived
        self.millisecondsSinceAckReceived = millisecondsSinceAckReceived
        self.millisecondsSinceDataSent = millisecondsSinceDataSent
        self.unacknowledged = unacknowledged
    }
}

/// One TCP socket of the host as a sock_diag dump shows it (`struct inet_diag_msg` and its
/// INET_DIAG_INFO attribute). The cookie names the socket for its whole life, across polls.
package struct TCPSocketSample: Hashable, Sendable {
    /// `idiag_cookie`: the kernel's unique id of the socket (never reused while it lives).
    public var cookie: UInt64
    public var state: TCPState
    /// The local address; an IPv4-mapped address of a dual-stack socket is given as IPv4.
    public var source: IPAddress
    public var sourcePort: UInt16
    public var destination: IPAddress
    public var destinationPort: UInt16
    /// `idiag_if`: the interface the socket is bound to (SO_BINDTODEVICE, or a link-local
    /// scope), 0 when none.
    public var boundInterface: Int32
    /// nil when the kernel sent no tcp_info (request sockets in SYN_RECV have none).
    public var counters: TCPCounters?
    /// `idiag_uid`: the user that owns the socket, nil when unknown (a destroy event carries 0
    /// whoever owned it, so it is never read from one).
    public var owner: UInt32?
    /// INET_DIAG_CGROUP_ID: the cgroup v2 id (the inode number of its directory) of the
    /// process that created the socket, which a systemd unit's traffic shares; 0 when the
    /// kernel did not say (before 5.7).
    public var controlGroup: UInt64
    /// `idiag_rqueue`: bytes received that the application has not read yet. A reader that
    /// stops fills the window, and the peer's probes of a zero window are then no sign of a path.
    public var unread: UInt32 = 0

    public init(
        cookie: UInt64, state: TCPState = .established, source: IPAddress, sourcePort: UInt16 = 0,
        destination: IPAddress, destinationPort: UInt16 = 0, boundInterface: Int32 = 0, counters: TCPCounters?,
        owner: UInt32? = 0, controlGroup: UInt64 = 0
    ) {
        self.cookie = cookie
        self.state = state
        self.source = source
        self.sourcePort = sourcePort
        self.destination = destination
        self.destinationPort = destinationPort
        self.boundInterface = boundInterface
        self.counters = counters
        self.owner = owner
        self.controlGroup = controlGroup
    }
}
