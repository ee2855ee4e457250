import CSystemd
import Foundation
import Testing
@testable import Reachability

/// The loop's bounded reading of a call's arguments (`BusMessage+Bounded.swift`): a string past
/// its bound is refused with the method's own message, naming the argument and the bound and
/// quoting an excerpt. Messages here are real sd-bus messages, built and sealed on a connection
/// to a private dbus-daemon.
@Suite(.serialized)
struct BoundedReadingTests {
    /// A sealed method call with the arguments `build` appends, read from its start.
    static func sealedCall(_ bus: BusConnection, _ build: (BusMessage) throws(BusError) -> Void) throws -> OpaquePointer {
        var call: OpaquePointer?
        #expect(sd_bus_message_new_method_call(bus.bus, &call, "org.reachd.Test", "/test", "org.reachd.Test", "Take") >= 0)
        let message = try #require(call)
        try build(BusMessage(message))
        #expect(sd_bus_message_seal(message, 7, 0) >= 0)
        #expect(sd_bus_message_rewind(message, 1) >= 0)
        return message
    }

    static func withBus<T>(_ body: (BusConnection) throws -> T) throws -> T {
        let harness = try DaemonHarness(nil, start: false)
        defer { harness.shutdown() }
        let bus = try BusConnection(.address(harness.address), description: "screen-test")
        return try body(bus)
    }

    static let long = String(repeating: "b", count: 10_000)

    @Test func aStringPastItsBoundIsRefusedWithTheMethodsMessageAndAnExcerpt() throws {
        try Self.withBus { bus in
            let call = try Self.sealedCall(bus) { message throws(BusError) in
                try message.append("wifi")
                try message.open("a", "{sv}")
                try message.appendEntry("RequiredKind", "s") { entry throws(BusError) in try entry.append(Self.long) }
                try message.close()
            }
            defer { sd_bus_message_unref(call) }
            let message = BusMessage(call)
            #expect(try message.readString("kind", maximumBytes: 32) == "wifi")
            #expect(try message.enter("a", "{sv}"))
            #expect(try message.enter("e", "sv"))
            #expect(try message.readString("an option key", maximumBytes: 64) == "RequiredKind")
            #expect(try message.enterVariant(holding: "s"))
            #expect(throws: BusError(name: "org.reachd.Test.Error.Refused", message: "RequiredKind is 10000 bytes, at most 32: '\(String(repeating: "b", count: 64))'…(10000 bytes)")) {
                try message.readString("RequiredKind", maximumBytes: 32, refusal: "org.reachd.Test.Error.Refused")
            }
        }
    }
}

/// Through reachd: a caller's calls are answered in the order it sent them, and Properties calls,
/// which reachd answers itself (`PropertyCalls`), as sd-bus would.
@Suite(rootOnly, .serialized)
struct PropertyCallsDaemonTests {
    @Test func aCallersCallsAreAnsweredInTheOrderSent() async throws {
        let scenario = try DaemonBusTests.Scenario("screenorder")
        let harness = try DaemonHarness(scenario.ns)
        defer { withExtendedLifetime(scenario) { harness.shutdown() } }
        try await harness.ready()
        let client = try harness.connect()
        // A 60,000-byte address (under the calls' size bound) takes its reader a while; GetStatus,
        // without arguments, would be answered at once by the loop, ahead of it, if it did not
        // wait behind it.
        let big = String(repeating: "a", count: 60_000)
        var order: [String] = []
        var slots: [BusSlot] = []
        for round in 0..<5 {
            slots.append(try client.callAsync(
                destination: DaemonHarness.busName, path: DaemonHarness.objectPath, interface: DaemonHarness.interface,
                member: "CheckAddress", { message throws(BusError) in try message.append(big) }
            ) { result in
                if case let .failure(error) = result, error.message.hasPrefix("address is 60000 bytes, at most 64") { order.append("check \(round)") }
            })
            slots.append(try client.callAsync(
                destination: DaemonHarness.busName, path: DaemonHarness.objectPath, interface: DaemonHarness.interface, member: "GetStatus"
            ) { result in
                if case .success = result { order.append("status \(round)") }
            })
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while order.count < 10, ContinuousClock.now < deadline {
            while try client.process() {}
            try client.wait(timeout: .milliseconds(20))
        }
        withExtendedLifetime(slots) {}
        #expect(order == (0..<5).flatMap { ["check \($0)", "status \($0)"] }, "\(order)")
    }

    /// Properties calls, taken from sd-bus and answered from the same vtables: values, the
    /// whole set, and sd-bus's error names for what is not there or not writable.
    @Test func propertiesCallsAreAnsweredAsSdBusWould() async throws {
        let scenario = try DaemonBusTests.Scenario("screenprops")
        let harness = try DaemonHarness(scenario.ns)
        defer { withExtendedLifetime(scenario) { harness.shutdown() } }
        try await harness.ready()
        let client = try harness.connect()
        let properties = "org.freedesktop.DBus.Properties"
        #expect(try DaemonHarness.property(client, "State") as String == "online")
        let all = try harness.busctl(["call", DaemonHarness.busName, DaemonHarness.objectPath, properties, "GetAll", "s", ""])
        #expect(all.status == 0 && all.stdout.contains("\"State\" s \"online\""), "\(all)")
        let named = try harness.busctl(["call", DaemonHarness.busName, DaemonHarness.objectPath, properties, "GetAll", "s", DaemonHarness.interface])
        #expect(named.stdout == all.stdout, "GetAll of the one interface is GetAll of all: \(named)")
        let missing = DaemonHarness.callError(client, "Get", interface: properties) { message throws(BusError) in
            try message.append(DaemonHarness.interface)
            try message.append("NoSuchProperty")
        }
        #expect(missing?.name == "org.freedesktop.DBus.Error.UnknownProperty" && missing?.message.contains("'NoSuchProperty'") == true, "\(String(describing: missing))")
        let unknown = DaemonHarness.callError(client, "GetAll", interface: properties) { message throws(BusError) in try message.append("org.example.None") }
        #expect(unknown?.name == "org.freedesktop.DBus.Error.UnknownInterface", "\(String(describing: unknown))")
        let set = DaemonHarness.callError(client, "Set", interface: properties) { message throws(BusError) in
            try message.append(DaemonHarness.interface)
            try message.append("State")
            try message.open("v", "s")
            try message.append("offline")
            try message.close()
        }
        #expect(set?.name == "org.freedesktop.DBus.Error.PropertyReadOnly", "\(String(describing: set))")
        let bad = DaemonHarness.callError(client, "Get", interface: properties) { message throws(BusError) in try message.append(UInt32(1)) }
        #expect(bad?.name == "org.freedesktop.DBus.Error.InvalidArgs", "\(String(describing: bad))")
        #expect(try DaemonHarness.property(client, "State") as String == "online", "still online, still answering")
    }
}
