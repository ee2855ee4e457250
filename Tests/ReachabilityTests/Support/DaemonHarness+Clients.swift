import Foundation
@testable import Reachability

/// Asking the harness's reachd: through independent clients (busctl), and through our own
/// connection where a shell client would be slow (error names, thousands of calls).
extension DaemonHarness {
    // MARK: independent clients (busctl, dbus-send)

    /// `busctl --address=BUS ARGUMENTS...` to completion.
    func busctl(_ arguments: [String], timeout: Duration = .seconds(20)) throws -> Output {
        try Self.execute("/usr/bin/busctl", ["--address=\(address)"] + arguments, timeout: timeout)
    }

    /// `busctl call` on reachd's object: `METHOD SIGNATURE ARGUMENTS...`, with `--json=short`.
    func busctlCall(_ method: String, _ signature: String = "", _ arguments: String...) throws -> Output {
        var command = ["--json=short", "call", Self.busName, Self.objectPath, Self.interface, method]
        if !signature.isEmpty { command += [signature] + arguments }
        return try busctl(command)
    }

    /// The `data` of a `busctl --json=short` answer (one JSON object per line; the last one).
    static func jsonData(_ output: Output) throws -> [Any] {
        let line = output.stdout.split(separator: "\n").last.map(String.init) ?? ""
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw CommandFailed(command: "busctl json", status: output.status, output: output.stdout + output.stderr)
        }
        if let data = object["data"] as? [Any] { return data }
        if let data = object["data"] { return [data] }
        throw CommandFailed(command: "busctl json", status: output.status, output: output.stdout + output.stderr)
    }

    /// The XML `busctl --xml-interface introspect` prints for `path`.
    func introspectXML(_ path: String = DaemonHarness.objectPath) throws -> String {
        let output = try busctl(["--xml-interface", "introspect", Self.busName, path])
        guard output.status == 0 else { throw CommandFailed(command: "busctl introspect \(path)", status: output.status, output: output.stderr) }
        return output.stdout
    }

    /// `busctl monitor` with `match`, started and listening when this returns.
    func monitor(_ match: String = "type='signal',path_namespace='/org/reachd/Reachability1'") throws -> SignalMonitor {
        try SignalMonitor(address: address, match: match)
    }

    // MARK: our own client (for what a shell client does slowly: error names, thousands of calls)

    func connect(_ description: String = "daemon-harness") throws -> BusConnection {
        try BusConnection(.address(address), description: description)
    }

    static func call(
        _ client: BusConnection, _ member: String, path: String = objectPath, interface: String = DaemonHarness.interface,
        timeout: Duration = .seconds(10), _ build: (BusMessage) throws(BusError) -> Void = { _ in }
    ) throws(BusError) -> OwnedBusMessage {
        try client.call(destination: busName, path: path, interface: interface, member: member, timeout: timeout, build)
    }

    /// The error of a call that must fail (nil when it succeeded).
    static func callError(
        _ client: BusConnection, _ member: String, path: String = objectPath, interface: String = DaemonHarness.interface,
        _ build: (BusMessage) throws(BusError) -> Void = { _ in }
    ) -> BusError? {
        do {
            _ = try call(client, member, path: path, interface: interface, build)
            return nil
        } catch {
            return error
        }
    }

    /// Reads a reply while it is certainly alive: a `BusMessage` borrows the reference its
    /// `OwnedBusMessage` holds, so `call(...).message.read...()` could read a freed message.
    static func read<T>(_ reply: OwnedBusMessage, _ body: (BusMessage) throws -> T) throws -> T {
        try withExtendedLifetime(reply) { try body(reply.message) }
    }

    /// Watch(target): the new watch object's path.
    static func watch(_ client: BusConnection, _ target: String) throws -> String {
        let reply = try call(client, "Watch") { message throws(BusError) in try message.append(target) }
        return try read(reply) { try $0.readObjectPath() }
    }

    static func property(_ client: BusConnection, _ name: String, path: String = objectPath, interface: String = DaemonHarness.interface) throws -> String {
        let reply = try call(client, "Get", path: path, interface: "org.freedesktop.DBus.Properties") { message throws(BusError) in
            try message.append(interface)
            try message.append(name)
        }
        return try read(reply) { message in
            _ = try message.enter("v", "s")
            return try message.readString()
        }
    }

    static func property(_ client: BusConnection, _ name: String, path: String = objectPath, interface: String = DaemonHarness.interface) throws -> UInt32 {
        let reply = try call(client, "Get", path: path, interface: "org.freedesktop.DBus.Properties") { message throws(BusError) in
            try message.append(interface)
            try message.append(name)
        }
        return try read(reply) { message in
            _ = try message.enter("v", "u")
            return try message.readUInt32()
        }
    }

    struct Status: Equatable {
        var flags: UInt32 = 0
        var state = ""
        var primaryInterface = ""
        var availableInterfaces: [String] = []
        var generation: UInt64 = 0
    }

    static func status(_ client: BusConnection) throws -> Status {
        let reply = try call(client, "GetStatus")
        return try read(reply) { message in try status(from: message) }
    }

    private static func status(from message: BusMessage) throws -> Status {
        var status = Status()
        _ = try message.enter("a", "{sv}")
        while try message.enter("e", "sv") {
            switch try message.readString() {
            case "Flags": _ = try message.enter("v", "u"); status.flags = try message.readUInt32()
            case "State": _ = try message.enter("v", "s"); status.state = try message.readString()
            case "PrimaryInterface": _ = try message.enter("v", "s"); status.primaryInterface = try message.readString()
            case "AvailableInterfaces": _ = try message.enter("v", "as"); status.availableInterfaces = try message.readStringArray()
            case "Generation": _ = try message.enter("v", "t"); status.generation = try message.readUInt64()
            default: try message.skip("v"); try message.exit(); continue
            }
            try message.exit()  // v
            try message.exit()  // e
        }
        try message.exit()
        return status
    }

    /// A JSON number as busctl prints u and t (NSNumber, Int or Double after JSONSerialization).
    static func jsonNumber(_ value: Any?) -> UInt64? {
        switch value {
        case let value as UInt64: value
        case let value as Int: value >= 0 ? UInt64(value) : nil
        case let value as NSNumber: value.uint64Value
        case let value as Double: value >= 0 ? UInt64(value) : nil
        default: nil
        }
    }
}
