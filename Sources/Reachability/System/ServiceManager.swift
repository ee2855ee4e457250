import CNetlink
import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// sd_notify(3): tells the service manager about readiness and status. Without NOTIFY_SOCKET
/// it does nothing, so the daemon runs the same under systemd and by hand.
package enum ServiceManager {
    @discardableResult
    public static func notify(_ state: String) -> Bool {
        // Assignments are lines; a value (STATUS= naming an interface, a portal, a configuration
        // line) never carries a control character to systemctl status.
        sd_notify(0, state.escapingControlCharacters(keepingNewlines: true)) > 0
    }

    /// The file descriptors systemd passed (socket units: LISTEN_FDS/LISTEN_PID naming this
    /// process), from fd 3 on, each with its name (`FileDescriptorName=`, by default the socket
    /// unit's name; "unknown" when LISTEN_FDNAMES is unset); empty when none. The variables are
    /// cleared, so children do not inherit them. What they are is for the caller to check.
    /// A failure (LISTEN_FDS naming a descriptor that is not open) is thrown with its errno.
    public static func listenedDescriptors() throws(SystemError) -> [(descriptor: Int32, name: String)] {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = sd_listen_fds_with_names(1, &names)
        if count < 0 { throw SystemError("sd_listen_fds_with_names", errno: -count) }
        guard count > 0 else { return [] }
        defer {
            for index in 0..<Int(count) { free(names?[index]) }
            free(names)
        }
        return (0..<count).map { index in
            (SD_LISTEN_FDS_START + index, names?[Int(index)].map { String(cString: $0) } ?? "unknown")
        }
    }

    /// Whether `descriptor` is a listening stream socket (sd_is_socket), as a socket unit's
    /// `ListenStream=` passes.
    public static func isListeningStreamSocket(_ descriptor: Int32) -> Bool {
        sd_is_socket(descriptor, AF_UNSPEC, Int32(SOCK_STREAM.rawValue), 1) > 0
    }
}
