import ReachabilitySystem  // String.inertExcerpt

/// A systemd service's network sandbox, as systemd reports it over D-Bus (`systemctl show`):
/// what decides where that service's packets may go, beside the host's routes. Values only; the
/// judgement is `UnitPolicy`'s, the reading reachd's.
package struct UnitSandbox: Hashable, Sendable {
    /// An allow or deny list of names (`RestrictNetworkInterfaces=`, `RestrictAddressFamilies=`),
    /// systemd's `(bas)`: `allows` true for a list of what is allowed, false for one of what is
    /// denied (the `~` form); an empty deny list restricts nothing.
    public struct NameList: Hashable, Sendable {
        public var allows: Bool
        public var names: [String]
        public init(allows: Bool = false, names: [String] = []) {
            self.allows = allows
            self.names = names
        }
        /// No restriction: systemd's `(false, [])`.
        public var isEmpty: Bool { !allows && names.isEmpty }
        public func permits(_ name: String) -> Bool { allows == names.contains(name) }
        /// As the setting is written (`~eth0 wg0`).
        public var description: String { (allows ? "" : "~") + names.joined(separator: " ") }
    }

    /// Whose traffic the unit's is: routed as this uid, by the kernel's uid rules.
    public enum User: Hashable, Sendable {
        /// The running main process's uid, or `User=`'s.
        case known(UInt32)
        /// `DynamicUser=yes` of a unit not running: its uid is allocated when it starts.
        case dynamic
        /// `User=` names a user reachd cannot find in /etc/passwd.
        case unresolved(String)
    }

    /// The unit's name, as asked (`backup.service`).
    public var unit: String
    public var user: User
    /// `NetworkNamespacePath=`; empty without one.
    public var namespacePath: String
    /// `PrivateNetwork=yes`: a namespace of its own with a loopback only.
    public var privateNetwork: Bool
    /// `IPAddressAllow=` and `IPAddressDeny=`.
    public var addressAllow: [IPPrefix]
    public var addressDeny: [IPPrefix]
    /// Whether systemd enforces `IPAddressAllow=`/`IPAddressDeny=`: its BPF filter needs the
    /// unified cgroup hierarchy (cgroup v2); on the legacy one systemd ignores both.
    public var addressFilterEnforced = true
    public var interfaces: NameList
    /// Whether systemd enforces `RestrictNetworkInterfaces=`: it needs systemd built with
    /// BPF_FRAMEWORK (Debian 12's systemd 252 is not), and without it systemd ignores the setting.
    public var interfacesEnforced: Bool
    public var families: NameList
    /// The main process while the unit runs; 0 when it does not.
    public var mainPID: UInt32
    /// `ControlGroup`: its cgroup's path under the unified hierarchy (`/system.slice/NAME`)
    /// while it runs; empty when it does not.
    public var controlGroup = ""

    public init(
        unit: String, user: User = .known(0), namespacePath: String = "", privateNetwork: Bool = false, addressAllow: [IPPrefix] = [],
        addressDeny: [IPPrefix] = [], interfaces: NameList = .init(), interfacesEnforced: Bool = true, families: NameList = .init(),
        mainPID: UInt32 = 0
    ) {
        self.unit = unit
        self.user = user
        self.namespacePath = namespacePath
        self.privateNetwork = privateNetwork
        self.addressAllow = addressAllow
        self.addressDeny = addressDeny
        self.interfaces = interfaces
        self.interfacesEnforced = interfacesEnforced
        self.families = families
        self.mainPID = mainPID
    }

    /// The uid its traffic is routed as: a dynamic or unknown user is judged as no user at all
    /// would be (the system's view), and the policy layer says so.
    public var routedUID: UInt32? {
        if case let .known(uid) = user { return uid }
        return nil
    }

    /// Where the unit's packets are routed: the host's namespace, a namespace of its own (its
    /// running process's, or NetworkNamespacePath='s), or PrivateNetwork='s loopback alone.
    public enum Namespace: Hashable, Sendable {
        case host
        case path(String)
        case loopbackOnly
    }
}

/// A unit's name as systemd accepts it, checked before anything is asked of systemd: a service
/// (`NAME.service`, or `NAME`, which means it), at most 255 bytes of letters, digits and
/// `: - _ . \ @`, as systemd's own unit_name_is_valid. A refusal names the value.
package enum UnitName {
    public static let maximumLength = 255
    private static let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-_.\\@".utf8)

    public static func validate(_ text: String) -> Result<String, ExplanationRefusal> {
        func refuse(_ why: String) -> Result<String, ExplanationRefusal> {
            .failure(ExplanationRefusal(description: "invalid unit name \(text.inertExcerpt()): \(why)"))
        }
        guard !text.isEmpty else { return refuse("empty") }
        guard text.utf8.allSatisfy({ allowed.contains($0) }) else { return refuse("only letters, digits and : - _ . \\ @ may appear") }
        let name = text.hasSuffix(".service") || text.contains(".") ? text : text + ".service"
        guard name.utf8.count <= maximumLength else { return refuse("longer than \(maximumLength) bytes") }
        guard name.hasSuffix(".service") else { return refuse("only services are judged (NAME.service)") }
        let stem = name.dropLast(".service".count)
        guard !stem.isEmpty, !stem.hasPrefix("@"), !stem.hasPrefix("."), stem.filter({ $0 == "@" }).count <= 1 else {
            return refuse("not a service's name")
        }
        guard !stem.hasSuffix("@") else { return refuse("a template, not a unit: name an instance (NAME@INSTANCE.service)") }
        return .success(name)
    }
}
