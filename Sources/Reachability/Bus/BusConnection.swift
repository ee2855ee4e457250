import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// An sd_bus_message this side holds a reference to (a reply, or a call answered later).
package final class OwnedBusMessage {
    public let message: BusMessage

    /// Takes over a reference the caller already owns.
    package init(adopting pointer: OpaquePointer) { message = BusMessage(pointer) }

    /// Adds a reference to a borrowed message (to answer a call after its handler returned).
    public init(retaining message: BusMessage) {
        sd_bus_message_ref(message.pointer)
        self.message = message
    }

    deinit { sd_bus_message_unref(message.pointer) }
}

/// A registration on the bus (object, match, name request); removed when released.
package final class BusSlot {
    private var slot: OpaquePointer?
    private let keepAlive: AnyObject?

    package init(_ slot: OpaquePointer?, keepAlive: AnyObject? = nil) {
        self.slot = slot
        self.keepAlive = keepAlive
    }

    deinit {
        if let slot { sd_bus_slot_unref(slot) }
        (keepAlive as? BusRegistration)?.release()
    }
}

/// A connection to a D-Bus bus. The daemon attaches it to its `EventLoop`; reachctl uses the
/// synchronous `call` with a timeout. One thread only.
package final class BusConnection {
    public let bus: OpaquePointer

    package typealias Address = BusAddress

    /// Connects and says Hello. The connection never takes file descriptors: no method of
    /// reachd's has one among its arguments and nothing a client reads carries one, yet the bus
    /// passes them with any message whatever its signature, and a call held for its answer (a
    /// host check into a slow nameserver) held its descriptors with it: some 70 calls of 16 each
    /// took reachd past systemd's soft limit of 1024. Declining them when the connection is made
    /// (sd-bus never offers NEGOTIATE_UNIX_FD) makes the broker refuse every such message on the
    /// sender's side (NotSupported) before any byte of it reaches this process.
    public init(_ address: Address, description: String) throws(BusError) {
        guard let text = address.text else {
            throw BusError("connect to the user bus: neither DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR is set", code: -ENOMEDIUM)
        }
        var bus: OpaquePointer?
        var result = sd_bus_new(&bus)
        guard result >= 0, let bus else { throw BusError("connect to the \(address)", code: result) }
        sd_bus_set_description(bus, description)
        result = sd_bus_set_address(bus, text)
        if result >= 0 { result = sd_bus_negotiate_fds(bus, 0) }
        if result >= 0 { result = sd_bus_set_bus_client(bus, 1) }
        if result >= 0 { result = sd_bus_start(bus) }
        guard result >= 0 else {
            sd_bus_unref(bus)
            throw BusError("connect to the \(address)", code: result)
        }
        self.bus = bus
    }

    /// Runs this connection on a loop, once `attach` was called.
    private var driver: BusLoopDriver?
    /// Answers Properties calls to served objects, once `attach` was called.
    private let properties = PropertyCalls()
    private let sizeBound = CallSizeBound()

    deinit {
        driver = nil
        // Flushing waits for the set-up first, without a bound (90 s against a peer that never
        // answers): a connection never set up has nothing of ours to flush anyway.
        if sd_bus_is_ready(bus) > 0 { sd_bus_flush_close_unref(bus) } else { sd_bus_close_unref(bus) }
    }

    /// Hands the connection's fd and timers to the loop. When the connection fails, `onLoss`
    /// learns why (the errno's text, and what it usually means) and the loop exits with 1, so
    /// systemd restarts the daemon. While the broker does not read, signals are held back, the
    /// latest of each kind, instead of queueing without bound (`BusLoopDriver`).
    public func attach(to loop: EventLoop, onLoss: @escaping (_ cause: String) -> Void) throws(BusError) {
        driver = try BusLoopDriver(self, loop: loop, onLoss: onLoss)
        try properties.takeProperties(of: self)
        // sd-bus runs the filter added last first: the bound comes before every reading.
        try sizeBound.install(on: bus)
    }

    // MARK: serving

    /// What the bus answered to RequestName (the D-Bus specification's reply codes).
    public enum NameRequest: Equatable, Sendable {
        /// The name is ours (DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER or ALREADY_OWNER).
        case owned
        /// Another connection owns it; we are not queued (DBUS_REQUEST_NAME_REPLY_EXISTS).
        case ownedByAnother
        /// In line behind the owner (IN_QUEUE); only with SD_BUS_NAME_QUEUE, which we never ask.
        case queued
    }

    /// Asks for `name` without waiting and without queueing behind another owner; `handler`
    /// learns from the bus's reply whether the name is ours. A successful call alone does not
    /// say so: another owner is a successful reply too, with another code.
    public func requestName(_ name: String, _ handler: @escaping (Result<NameRequest, BusError>) -> Void) throws(BusError) -> BusSlot {
        let box = ReplyHandler { message, error in
            guard let message else { return handler(.failure(error ?? BusError("request the name \(name)", code: -EIO))) }
            do throws(BusError) {
                switch try message.readUInt32() {
                case 1, 4: handler(.success(.owned))
                case 2: handler(.success(.queued))
                case 3: handler(.success(.ownedByAnother))
                case let code: handler(.failure(BusError("request the name \(name): unknown reply code \(code)", code: -EPROTO)))
                }
            } catch {
                handler(.failure(error))
            }
        }
        var slot: OpaquePointer?
        let context = Unmanaged.passUnretained(box).toOpaque()
        let result = sd_bus_request_name_async(bus, &slot, name, 0, replyTrampoline, context)
        guard result >= 0 else { throw BusError("request the name \(name)", code: result) }
        return BusSlot(slot, keepAlive: box)
    }

    /// Gives `name` up without waiting for the bus's answer (a surface switched off on reload).
    public func releaseName(_ name: String) {
        _ = sd_bus_release_name_async(bus, nil, name, nil, nil)
    }

    /// Writes out what is queued, waiting for the socket if it must: only once the loop has
    /// stopped (a name given up as the daemon leaves), never on it.
    public func flush() {
        _ = sd_bus_flush(bus)
    }

    /// Calls `handler` for every matching signal, without a synchronous round trip for the match.
    public func matchSignal(
        sender: String?, path: String?, interface: String?, member: String?,
        _ handler: @escaping (BusMessage) -> Void
    ) throws(BusError) -> BusSlot {
        let box = ReplyHandler { message, _ in if let message { handler(message) } }
        var slot: OpaquePointer?
        let context = Unmanaged.passUnretained(box).toOpaque()
        let result = sd_bus_match_signal_async(bus, &slot, sender, path, interface, member, replyTrampoline, nil, context)
        guard result >= 0 else { throw BusError("add a signal match", code: result) }
        return BusSlot(slot, keepAlive: box)
    }

    /// Calls `handler` for every message `rule` matches (a D-Bus match rule: for what
    /// `matchSignal` cannot say, such as `arg0=` or `path_namespace=`), without a synchronous
    /// round trip for the match.
    public func match(_ rule: String, _ handler: @escaping (BusMessage) -> Void) throws(BusError) -> BusSlot {
        let box = ReplyHandler { message, _ in if let message { handler(message) } }
        var slot: OpaquePointer?
        let context = Unmanaged.passUnretained(box).toOpaque()
        let result = sd_bus_add_match_async(bus, &slot, rule, replyTrampoline, nil, context)
        guard result >= 0 else { throw BusError("add match \(rule)", code: result) }
        return BusSlot(slot, keepAlive: box)
    }

    /// This connection's unique name (`:1.42`); nil until the bus has answered Hello (asked
    /// only then: sd-bus would otherwise wait for it).
    public var uniqueName: String? {
        guard sd_bus_is_ready(bus) > 0 else { return nil }
        var name: UnsafePointer<CChar>?
        guard sd_bus_get_unique_name(bus, &name) >= 0, let name else { return nil }
        return String(cString: name)
    }

    /// Serves `object` at `path` with `vtable`. The slot keeps `object` alive, unless
    /// `retaining` is false: for an object that holds its own slot, whose owner frees it (and so
    /// the slot) by letting go of the object.
    public func add(
        _ object: any BusObject, at path: String, interface: String, vtable: BusVTable, retaining: Bool = true
    ) throws(BusError) -> BusSlot {
        let registration = BusRegistration(object: object, vtable: vtable, path: path, interface: interface, retaining: retaining, properties: properties)
        var slot: OpaquePointer?
        let context = Unmanaged.passUnretained(registration).toOpaque()
        let result = sd_bus_add_object_vtable(bus, &slot, path, interface, vtable.entries.baseAddress, context)
        guard result >= 0 else { throw BusError("serve \(interface) at \(path)", code: result) }
        properties.serve(registration)
        return BusSlot(slot, keepAlive: registration)
    }

    /// Sends a method return for `call`, with arguments appended by `build`.
    public func reply(to call: BusMessage, _ build: (BusMessage) throws(BusError) -> Void) throws(BusError) {
        try sendReply(answering: call.pointer, build)
    }

    /// Sends an error reply for `call`.
    public func reply(to call: BusMessage, error: BusError) {
        sendError(error, answering: call.pointer)
    }

    /// Sends a signal, or, while the broker is not reading, holds it back in place of the one of
    /// the same path, interface and member held before (see `attach`).
    public func emitSignal(path: String, interface: String, member: String, _ build: (BusMessage) throws(BusError) -> Void) throws(BusError) {
        var signal: OpaquePointer?
        var result = sd_bus_message_new_signal(bus, &signal, path, interface, member)
        guard result >= 0, let signal else { throw BusError("create signal \(member)", code: result) }
        defer { sd_bus_message_unref(signal) }
        try build(BusMessage(signal))
        if let driver, driver.holdsSignals {
            driver.hold(signal, key: .signal(path: path, interface: interface, member: member))
            return
        }
        result = sd_bus_send(bus, signal, nil)
        guard result >= 0 else { throw BusError("send signal \(member)", code: result) }
    }

    /// org.freedesktop.DBus.Properties.PropertiesChanged for `names` (values read from the vtable
    /// when sent: while the broker is not reading, the names are held back and merged).
    public func emitPropertiesChanged(path: String, interface: String, names: [String]) {
        if let driver, driver.holdsSignals {
            driver.holdProperties(path: path, interface: interface, names: names)
            return
        }
        sendPropertiesChanged(path: path, interface: interface, names: names)
    }

    package func sendPropertiesChanged(path: String, interface: String, names: [String]) {
        var pointers = names.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        _ = pointers.withUnsafeMutableBufferPointer { sd_bus_emit_properties_changed_strv(bus, path, interface, $0.baseAddress) }
    }

    // MARK: calling (clients)

    /// A method call and its reply, waiting at most `timeout`, the connection's set-up included.
    /// The first call of a new connection goes out right behind Hello (`callWhileSettingUp`).
    public func call(
        destination: String, path: String, interface: String, member: String, timeout: Duration,
        _ build: (BusMessage) throws(BusError) -> Void = { _ in }
    ) throws(BusError) -> OwnedBusMessage {
        let deadline = ContinuousClock.now + timeout
        let call = try methodCall(destination: destination, path: path, interface: interface, member: member, build)
        defer { sd_bus_message_unref(call) }
        if sd_bus_is_ready(bus) == 0 { return try callWhileSettingUp(call, member: member, deadline: deadline, timeout: timeout) }
        try waitUntilReady(timeout: timeout)
        var error = csystemd_error_null()
        var reply: OpaquePointer?
        let left = max(deadline - .now, .microseconds(1))
        let result = sd_bus_call(bus, call, left.unsignedMicroseconds, &error, &reply)
        guard result >= 0, let reply else { throw BusError(consuming: &error, operation: "call \(member)", code: result) }
        return OwnedBusMessage(adopting: reply)
    }

    /// `call` on a connection not yet set up. sd_bus_call would first wait for the broker's
    /// answer to Hello, then send the call and wait again; queued now, the call goes out right
    /// behind Hello once the broker accepted the authentication, and one wait covers both
    /// answers: a round trip through the broker fewer for a client that connects to make one
    /// call (`reachctl is` from every timer's ExecCondition=, BENCHMARKS.md). What arrives
    /// meanwhile is dispatched, as while `waitUntilReady` waits; the errors are its and
    /// sd_bus_call's.
    private func callWhileSettingUp(
        _ call: OpaquePointer, member: String, deadline: ContinuousClock.Instant, timeout: Duration
    ) throws(BusError) -> OwnedBusMessage {
        var answer: Result<OwnedBusMessage, BusError>?
        let box = ReplyHandler { message, error in
            answer = message.map { .success(OwnedBusMessage(retaining: $0)) } ?? .failure(error ?? BusError("call \(member)", code: -EIO))
        }
        var slot: OpaquePointer?
        let left = max(deadline - .now, .microseconds(1))
        let queued = sd_bus_call_async(bus, &slot, call, replyTrampoline, Unmanaged.passUnretained(box).toOpaque(), left.unsignedMicroseconds)
        guard queued >= 0 else { throw BusError("call \(member)", code: queued) }
        // Released unanswered (past the deadline, the connection lost), the slot cancels the call.
        defer { withExtendedLifetime(box) { _ = sd_bus_slot_unref(slot) } }
        while true {
            if let answer { return try answer.get() }
            let operation = sd_bus_is_ready(bus) > 0 ? "call \(member)" : "set up the bus connection"
            let processed = sd_bus_process(bus, nil)
            guard processed >= 0 else { throw BusError(operation, code: processed) }
            if processed > 0 { continue }
            let left = deadline - .now
            guard left > .zero else {
                if sd_bus_is_ready(bus) > 0 { throw BusError(operation, code: -ETIMEDOUT) }
                throw BusError("\(operation): no answer within \(timeout.millisecondsRoundedUp) ms", code: -ETIMEDOUT)
            }
            let waited = sd_bus_wait(bus, left.unsignedMicroseconds)
            guard waited >= 0 || waited == -EINTR else { throw BusError("wait for the bus", code: waited) }
        }
    }

    /// A new method call message with its arguments; the caller unrefs it.
    private func methodCall(
        destination: String, path: String, interface: String, member: String, _ build: (BusMessage) throws(BusError) -> Void
    ) throws(BusError) -> OpaquePointer {
        var call: OpaquePointer?
        let result = sd_bus_message_new_method_call(bus, &call, destination, path, interface, member)
        guard result >= 0, let call else { throw BusError("create call \(member)", code: result) }
        do {
            try build(BusMessage(call))
        } catch {
            sd_bus_message_unref(call)
            throw error
        }
        return call
    }

    /// A method call whose reply (or error) reaches `handler` later, on the loop; never waits.
    /// Dropping the returned slot cancels the call. Without `timeout`, sd-bus' default (25 s)
    /// ends a call that gets no reply.
    public func callAsync(
        destination: String, path: String, interface: String, member: String, timeout: Duration? = nil,
        _ build: (BusMessage) throws(BusError) -> Void = { _ in },
        reply handler: @escaping (Result<BusMessage, BusError>) -> Void
    ) throws(BusError) -> BusSlot {
        let call = try methodCall(destination: destination, path: path, interface: interface, member: member, build)
        defer { sd_bus_message_unref(call) }
        let box = ReplyHandler { message, error in
            if let message { handler(.success(message)) } else { handler(.failure(error ?? BusError("call \(member)", code: -EIO))) }
        }
        var slot: OpaquePointer?
        let usec = timeout?.unsignedMicroseconds ?? 0
        let result = sd_bus_call_async(bus, &slot, call, replyTrampoline, Unmanaged.passUnretained(box).toOpaque(), usec)
        guard result >= 0 else { throw BusError("call \(member)", code: result) }
        return BusSlot(slot, keepAlive: box)
    }

    /// Adds a match synchronously (clients, before they start waiting).
    public func addMatch(_ rule: String, _ handler: @escaping (BusMessage) -> Void) throws(BusError) -> BusSlot {
        let box = ReplyHandler { message, _ in if let message { handler(message) } }
        var slot: OpaquePointer?
        let context = Unmanaged.passUnretained(box).toOpaque()
        let result = sd_bus_add_match(bus, &slot, rule, replyTrampoline, context)
        guard result >= 0 else { throw BusError("add match \(rule)", code: result) }
        return BusSlot(slot, keepAlive: box)
    }

    /// Processes what is queued; true when something was done (call again before waiting).
    public func process() throws(BusError) -> Bool {
        let result = sd_bus_process(bus, nil)
        guard result >= 0 else { throw BusError("process bus messages", code: result) }
        return result > 0
    }

    /// Waits at most `timeout` for the connection to be set up (authenticated, Hello answered).
    /// sd-bus's synchronous calls (`sd_bus_call`, a synchronous match) first wait for that with no
    /// bound but its authentication timeout, whatever their own: 90 s, seen with busctl
    /// `--timeout=1` against a socket whose peer accepts and never answers. At once when set up.
    public func waitUntilReady(timeout: Duration) throws(BusError) {
        let deadline = ContinuousClock.now + timeout
        while true {
            let ready = sd_bus_is_ready(bus)
            guard ready <= 0 else { return }
            guard ready == 0 else { throw BusError("set up the bus connection", code: ready) }
            let processed = sd_bus_process(bus, nil)
            guard processed >= 0 else { throw BusError("set up the bus connection", code: processed) }
            if processed > 0 { continue }
            let left = deadline - .now
            guard left > .zero else {
                throw BusError("set up the bus connection: no answer within \(timeout.millisecondsRoundedUp) ms", code: -ETIMEDOUT)
            }
            let waited = sd_bus_wait(bus, left.unsignedMicroseconds)
            guard waited >= 0 || waited == -EINTR else { throw BusError("wait for the bus", code: waited) }
        }
    }

    /// Waits up to `timeout` for bus activity.
    public func wait(timeout: Duration) throws(BusError) {
        let result = sd_bus_wait(bus, timeout.unsignedMicroseconds)
        guard result >= 0 || result == -EINTR else { throw BusError("wait for the bus", code: result) }
    }

    public var fileDescriptor: Int32 { sd_bus_get_fd(bus) }

    /// Set up: authenticated, and Hello answered on a bus.
    public var isReady: Bool { sd_bus_is_ready(bus) > 0 }
}

/// The Swift closure behind an asynchronous reply, a match or a name request.
package final class ReplyHandler {
    package let body: (BusMessage?, BusError?) -> Void
    package init(_ body: @escaping (BusMessage?, BusError?) -> Void) { self.body = body }
}

package let replyTrampoline: sd_bus_message_handler_t = { message, context, _ in
    guard let message, let context else { return 0 }
    let handler = Unmanaged<ReplyHandler>.fromOpaque(context).takeUnretainedValue()
    if let error = sd_bus_message_get_error(message), sd_bus_error_is_set(error) != 0 {
        let name = error.pointee.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
        let text = error.pointee.message.map { String(cString: $0) } ?? name
        handler.body(nil, BusError(name: name, message: text))
    } else {
        handler.body(BusMessage(message), nil)
    }
    return 0
}
