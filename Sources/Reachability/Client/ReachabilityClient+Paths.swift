/// Path watches (`WatchPath`): the host's path restricted to interface kinds, as reachd derives
/// it and the library would in-process (`Path(snapshot:restriction:)`).
extension ReachabilityClient {
    /// `WatchPath`: asks reachd to follow the host's path as `restriction` sees it and returns
    /// the watch's object path; its answer is `answer(ofPath:)` at once, and each change arrives
    /// as `Event.path` (after `subscribe()`, called here when it was not yet). A path watch
    /// counts against the same limits as a watch (LimitExceeded) and goes with `unwatch(_:)`.
    public func watchPath(_ restriction: Path.Restriction) throws(BusError) -> String {
        try subscribe()
        let reply = try call("WatchPath") { message throws(BusError) in try PathProperty.appendOptions(restriction, to: message) }
        let path = try reply.message.readObjectPath()
        paths[path] = Path(status: .unsatisfied)
        do {
            try refresh(path: path)
        } catch {
            try? unwatch(path)
            throw error
        }
        return path
    }

    /// The last known answer of a path watch of ours.
    public func answer(ofPath path: String) -> Path? { paths[path] }

    /// The path `restriction` sees now, through a path watch made and let go at once
    /// (`reachctl status --kind`).
    public func path(_ restriction: Path.Restriction) throws(BusError) -> Path {
        let object = try watchPath(restriction)
        defer { try? unwatch(object) }
        guard let path = paths[object] else { throw Self.badReply("WatchPath", "no answer") }
        return path
    }

    /// Reads a path watch's properties anew (GetAll).
    package func refresh(path object: String) throws(BusError) {
        let reply = try connection.call(
            destination: owner ?? ReachdContract.busName, path: object, interface: "org.freedesktop.DBus.Properties",
            member: "GetAll", timeout: timeout
        ) { message throws(BusError) in try message.append(ReachdContract.pathInterface) }
        var path = Path(status: .unsatisfied)
        try Self.readPathProperties(reply.message, into: &path)
        guard paths[object] != nil else { return }
        paths[object] = path
    }

    /// A path watch's PropertiesChanged (its interface name read): the values it carries applied
    /// to the path last known, as they name only what moved; read anew (GetAll) only when a
    /// property was invalidated without its value.
    package func apply(_ message: BusMessage, toPath object: String) throws(BusError) {
        guard var path = paths[object] else { return }
        try Self.readPathProperties(message, into: &path)
        paths[object] = path
        if try !message.readStringArray().isEmpty { try refresh(path: object) }
    }

    /// An `a{sv}` of path properties into `path`; unknown names and types are skipped.
    package static func readPathProperties(_ message: BusMessage, into path: inout Path) throws(BusError) {
        guard try message.enter("a", "{sv}") else { throw Self.badReply("GetAll", "expected a{sv}") }
        while try message.enter("e", "sv") {
            let name = try message.readString()
            if let row = PathProperty.all.first(where: { "\($0.name)" == name }), let read = row.read {
                _ = try Self.variant(message, "\(row.signature)") { m throws(BusError) in try read(m, &path) }
            } else {
                try message.skip("v")
            }
            try message.exit()
        }
        try message.exit()
    }
}
