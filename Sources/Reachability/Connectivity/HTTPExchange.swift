import CNetlink
#if canImport(Glibc)
import Glibc
#endif

/// One probe request on a non-blocking TCP socket, driven by the caller's loop: connect (bound
/// to a source address, which pins the request to the path being judged without any privilege),
/// send `GET`, read the answer until it can be judged. Owns its socket: closed when the exchange
/// ends, whatever happened. Never blocks; the deadline is the caller's timer.
package final class HTTPExchange {
    package enum Outcome: Sendable, Hashable {
        case answered(HTTPResponse)
        /// Nothing usable came back: what happened, as a sentence (`connect: Connection refused`).
        case failed(String)
    }

    private let socket: Descriptor
    package var fd: Int32 { socket.rawValue }
    private var request: [UInt8]
    private var sent = 0
    private var connected = false
    private var reader = HTTPResponseReader()

    /// The events the loop should wait for now.
    package var events: IOEvents { connected && sent == request.count ? .readable : .writable }

    /// Opens the socket and starts connecting to `address` on `url.port`, from `source` when
    /// given, and only through the link `device` when given (an uplink judged by itself: a source
    /// address alone does not choose the route). Throws when the socket cannot even be made or
    /// the connection fails at once.
    package init(url: ProbeURL, address: IPAddress, source: IPAddress?, device: String? = nil) throws(SystemError) {
        let family = Int32(address.family.rawValue)
        let socket = try Descriptor(
            checking: Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0), "socket")
        let fd = socket.rawValue
        request = Array((
            "GET \(url.path) HTTP/1.1\r\nHost: \(url.hostHeader)\r\nUser-Agent: reachd\r\nAccept: */*\r\n"
                + "Cache-Control: no-cache\r\nConnection: close\r\n\r\n"
        ).utf8)
        // Thrown before `self.socket` is set, `socket` ends with this scope and closes.
        if let device {
            // SO_BINDTODEVICE needs no capability since Linux 5.7 for a socket not bound to
            // a device yet, which is the only way it is used here.
            let set = Array(device.utf8).withUnsafeBufferPointer {
                setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, $0.baseAddress, socklen_t($0.count))
            }
            guard set == 0 else { throw SystemError("bind to device \(device)") }
        }
        if let source, source.family == address.family {
            let bound = source.withSocketAddress(port: 0) { bind(fd, $0, $1) }
            guard bound == 0 else { throw SystemError("bind to \(source)") }
        }
        let result = address.withSocketAddress(port: url.port) { connect(fd, $0, $1) }
        guard result == 0 || errno == EINPROGRESS else { throw SystemError("connect to \(address) port \(url.port)") }
        connected = result == 0
        self.socket = socket
    }

    /// Handles readiness; returns the outcome once there is one (then the exchange is over).
    package func handle(readable: Bool, writable: Bool) -> Outcome? {
        if !connected {
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return .failed(SystemError("getsockopt").description) }
            if error != 0 { return .failed(SystemError("connect", errno: error).description) }
            if !writable { return nil }
            connected = true
        }
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 {
                if errno == EAGAIN || errno == EINTR { return nil }
                return .failed(SystemError("send").description)
            }
            sent += count
        }
        guard readable else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        // A bounded number of reads per wakeup: the reader keeps at most a few KiB anyway.
        for _ in 0..<8 {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            do throws(HTTPResponseError) {
                if count > 0 {
                    if let response = try reader.feed(buffer[..<count]) { return .answered(response) }
                    continue
                }
                if count == 0 { return .answered(try reader.finish()) }
            } catch {
                return .failed(error.description)
            }
            if errno == EAGAIN || errno == EINTR { return nil }
            return .failed(SystemError("recv").description)
        }
        return nil
    }
}
