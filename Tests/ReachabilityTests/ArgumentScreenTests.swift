import CSystemd
import Foundation
import Testing
@testable import Reachability

/// issue 35: calls' arguments are read through off the loop (`ArgumentScreen`), so that sd-bus's
/// check of a huge string's UTF-8 never runs on the loop, and the loop's bounded readers refuse
/// such a string from the reader's measure with the method's own message. Messages here are
/// real sd-bus messages, built and sealed on a connection to a private dbus-daemon.
@Suite(.serialized)
struct ArgumentScreenTests {
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

    @Test func stringsAreMeasuredInTheOrderAMethodReadsThemAndTheCallIsLeftToReadAgain() throws {
        try Self.withBus { bus in
            let call = try Self.sealedCall(bus) { message throws(BusError) in
                try message.append("short")
                try message.append(UInt32(5))
                try message.open("a", "{sv}")
                try message.appendEntry("Kinds", "as") { entry throws(BusError) in try entry.append(["wifi", Self.long]) }
                try message.close()
                try message.append(objectPath: "/a/b")
            }
            defer { sd_bus_message_unref(call) }
            let measures = ArgumentReading.read(call)
            #expect(measures.isComplete)
            let shapes = measures.strings.map { measure -> String in
                switch measure {
                case .short: "short"
                case let .long(length, beginning): "long \(length) \(beginning.count) \(String(decoding: beginning.prefix(3), as: UTF8.self))"
                case let .unreadable(code): "unreadable \(code)"
                }
            }
            // "short", the key "Kinds", "wifi", the long one, the object path.
            #expect(shapes == ["short", "short", "short", "long 10000 256 bbb", "short"], "\(shapes)")
            #expect(try BusMessage(call).readString() == "short", "the call is rewound for its method")
        }
    }

    @Test func aStringMeasuredLongIsRefusedWithTheMethodsMessageWithoutBeingRead() throws {
        try Self.withBus { bus in
            let call = try Self.sealedCall(bus) { message throws(BusError) in
                try message.append("wifi")
                try message.open("a", "{sv}")
                try message.appendEntry("RequiredKind", "s") { entry throws(BusError) in try entry.append(Self.long) }
                try message.close()
            }
            defer { sd_bus_message_unref(call) }
            let message = BusMessage(call, measured: MeasuredStrings(ArgumentReading.read(call)))
            #expect(try message.readString("kind", maximumBytes: 32) == "wifi")
            #expect(try message.enter("a", "{sv}"))
            #expect(try message.enter("e", "sv"))
            #expect(try message.readString("an option key", maximumBytes: 64) == "RequiredKind")
            #expect(try message.enterVariant(holding: "s"))
            #expect(throws: BusError(name: "org.reachd.Test.Error.Refused", message: "RequiredKind is 10000 bytes, at most 32: '\(String(repeating: "b", count: 64))'…(10000 bytes)")) {
                try message.readString("RequiredKind", maximumBytes: 32, refusal: "org.reachd.Test.Error.Refused")
            }

            // The measure, not the string, decides: a measure that says 99 bytes is believed
            // (so the loop never reads a string measured long), and with no measures left in a
            // call read through only partly, the next string is refused unread.
            sd_bus_message_rewind(call, 1)
            let lying = StringMeasures(strings: [.long(length: 99, beginning: Array("wi".utf8))], isComplete: false)
            let told = BusMessage(call, measured: MeasuredStrings(lying))
            #expect(throws: BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "kind is 99 bytes, at most 32: 'wi'…(99 bytes)")) {
                try told.readString("kind", maximumBytes: 32)
            }
            sd_bus_message_rewind(call, 1)
            let none = BusMessage(call, measured: MeasuredStrings(StringMeasures(strings: [], isComplete: false)))
            #expect(throws: BusError.self) { try none.readString("kind", maximumBytes: 32) }
        }
    }

    @Test func readingStopsAtTheValuesBoundAndAMethodReadingPastItIsRefused() throws {
        try Self.withBus { bus in
            let many = Array(repeating: "vpn", count: ArgumentScreen.maximumValues + 100)
            let call = try Self.sealedCall(bus) { message throws(BusError) in try message.append(many) }
            defer { sd_bus_message_unref(call) }
            let measures = ArgumentReading.read(call)
            #expect(!measures.isComplete)
            // The array itself is a value: one string fewer than the bound.
            #expect(measures.strings.count == ArgumentScreen.maximumValues - 1)
            let message = BusMessage(call, measured: MeasuredStrings(measures))
            // A method bounded below the bound refuses by its own rule...
            #expect(throws: BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "kinds has more than 32 entries, the most reachd takes")) {
                try message.readStrings("kinds", maximumCount: 32, maximumBytes: 32)
            }
            // ...one that would read further is refused where the measures end.
            sd_bus_message_rewind(call, 1)
            let again = BusMessage(call, measured: MeasuredStrings(measures))
            let error = try #require(throws: BusError.self) { try again.readStrings("kinds", maximumCount: many.count, maximumBytes: 32) }
            #expect(error.message == "kinds lies past the 4096 values reachd reads of one call, far more than any of its methods takes", "\(error)")
        }
    }
}

/// Through reachd: a caller's calls are answered in the order it sent them, although the ones
/// with arguments are read on another thread first.
@Suite(rootOnly, .serialized)
struct ArgumentScreenDaemonTests {
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
