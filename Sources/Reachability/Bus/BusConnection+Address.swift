#if canImport(Glibc)
import Glibc
#endif

/// Which bus to talk to reachd on: the system bus (where reachd serves), the user's session bus, or
/// an explicit address.
public enum BusAddress: Sendable, Hashable {
    /// The system bus (`DBUS_SYSTEM_BUS_ADDRESS` honoured).
    case system
    /// The user's session bus (`DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`).
    case user
    /// An explicit address (`unix:path=...`), for tests and development.
    case address(String)
}

/// Where each kind of bus is, found as sd-bus's own `sd_bus_open_system` and `sd_bus_open_user`
/// find it: `BusConnection` makes its connections itself, to decline descriptors before Hello.
extension BusAddress: CustomStringConvertible {
    public var description: String {
        switch self {
        case .system: "system bus"
        case .user: "user bus"
        case let .address(text): "bus at \(text)"
        }
    }

    /// The address to connect to; nil when the user bus has none at all.
    package var text: String? {
        switch self {
        case .system: return Self.environment("DBUS_SYSTEM_BUS_ADDRESS") ?? "unix:path=/run/dbus/system_bus_socket"
        case .user:
            if let address = Self.environment("DBUS_SESSION_BUS_ADDRESS") { return address }
            return Self.environment("XDG_RUNTIME_DIR").map { "unix:path=" + Self.escaped($0) + "/bus" }
        case let .address(text): return text
        }
    }

    private static func environment(_ name: String) -> String? {
        guard let value = getenv(name), value.pointee != 0 else { return nil }
        return String(cString: value)
    }

    /// A path as a D-Bus address value: bytes other than `[A-Za-z0-9_/.-]` as `%xx`.
    private static func escaped(_ path: String) -> String {
        var text = ""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "_"), UInt8(ascii: "/"), UInt8(ascii: "."), UInt8(ascii: "-"):
                text.append(Character(Unicode.Scalar(byte)))
            default:
                text += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16)
            }
        }
        return text
    }
}
