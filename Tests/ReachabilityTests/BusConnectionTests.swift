#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing
@testable import Reachability

/// `BusConnection.call` on a new connection: the call goes out right behind Hello rather than
/// after Hello's answer (one round trip through the broker fewer for `reachctl is`, from every
/// timer), still bounded by its timeout. Against a broker that accepts the authentication and
/// then never answers a message, so what the client sent before any answer is all there is.
struct BusConnectionTests {
    @Test func aNewConnectionsFirstCallGoesOutBehindHelloBeforeItsAnswer() throws {
        let broker = try MuteBroker()
        defer { broker.close() }
        let connection = try BusConnection(.address("unix:path=\(broker.path)"), description: "pipelining")
        let clock = ContinuousClock()
        let start = clock.now
        #expect {
            _ = try connection.call(
                destination: "org.example.Mute", path: "/org/example/Mute", interface: "org.example.Mute", member: "Probe",
                timeout: .milliseconds(300))
        } throws: { error in
            // Hello was never answered: the connection was still being set up.
            "\(error)".contains("set up the bus connection: no answer within 300 ms")
        }
        let took = clock.now - start
        #expect(took >= .milliseconds(300) && took < .seconds(5), "the call took \(took)")
        // Both messages reached the broker though it answered neither: the call did not wait
        // for Hello's reply (sd_bus_call alone sends it only after that reply).
        let sent = broker.received
        let hello = try #require(sent.firstRange(of: Array("Hello".utf8)), "Hello was sent: \(sent.count) bytes")
        let probe = try #require(sent.firstRange(of: Array("Probe".utf8)), "the call was sent behind Hello: \(sent.count) bytes")
        #expect(hello.lowerBound < probe.lowerBound)
        // issue 50: no connection of reachd's takes descriptors, so none asks for them.
        #expect(sent.firstRange(of: Array("NEGOTIATE_UNIX_FD".utf8)) == nil, "descriptors declined")
    }

    /// Past the set-up, a call is sd_bus_call's as before: the reply, or the broker's error.
    @Test func callsOnAConnectionAlreadySetUpAreAnsweredAsBefore() throws {
        let fixture = try ReachdFixture(namespace: nil)
        let connection = try BusConnection(.address(fixture.address), description: "calls")
        let dbus = (destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus")
        // The first call, behind Hello: the bus's own answer.
        let first = try connection.call(destination: dbus.destination, path: dbus.path, interface: dbus.interface, member: "GetId", timeout: .seconds(5))
        let id = try withExtendedLifetime(first) { () throws(BusError) in try first.message.readString() }
        #expect(id.count == 32, "\(id)")
        // The second, once set up: the same answer, and an error reply is the broker's.
        let second = try connection.call(destination: dbus.destination, path: dbus.path, interface: dbus.interface, member: "GetId", timeout: .seconds(5))
        #expect(try withExtendedLifetime(second) { () throws(BusError) in try second.message.readString() } == id)
        #expect {
            _ = try connection.call(
                destination: ReachdContract.busName, path: ReachdContract.objectPath, interface: ReachdContract.interface,
                member: "GetStatus", timeout: .seconds(5))
        } throws: { error in
            (error as? BusError)?.name == "org.freedesktop.DBus.Error.ServiceUnknown"
        }
        // An error reply to the first call of a new connection is the same error.
        let fresh = try BusConnection(.address(fixture.address), description: "calls")
        #expect {
            _ = try fresh.call(
                destination: ReachdContract.busName, path: ReachdContract.objectPath, interface: ReachdContract.interface,
                member: "GetStatus", timeout: .seconds(5))
        } throws: { error in
            (error as? BusError)?.name == "org.freedesktop.DBus.Error.ServiceUnknown"
        }
    }
}

/// A Unix socket that takes one connection, accepts its D-Bus authentication as dbus-daemon does
/// (EXTERNAL, then file descriptors agreed), and from then on only reads: every byte the client
/// sends is kept, no message is ever answered.
final class MuteBroker: Sendable {
    let directory: String
    var path: String { directory + "/mute" }
    private let listener: Int32
    private final class Bytes: Sendable {
        let bytes = Mutex<[UInt8]>([])
        let connection = Mutex<Int32>(-1)
    }
    private let state = Bytes()

    /// What dbus-daemon answers sd-bus's pipelined `AUTH EXTERNAL`, `DATA` and `BEGIN` (seen with
    /// strace): a challenge with no data and OK with the server's GUID; `AGREE_UNIX_FD` only to a
    /// client that sent `NEGOTIATE_UNIX_FD`, which reachd's connections never do.
    static func authenticationReply(negotiated: Bool) -> String {
        "DATA\r\nOK 0123456789abcdef0123456789abcdef\r\n" + (negotiated ? "AGREE_UNIX_FD\r\n" : "")
    }

    init() throws {
        directory = try makeScratchDirectory("mute-bus")
        let fd = try listeningUnixSocket(at: directory + "/mute", backlog: 1)
        listener = fd
        let state = self.state
        // accept(2) and read(2) block: a thread of its own, ended by shutting the sockets down.
        try DedicatedThread.start {
            let connection = accept(fd, nil, nil)
            guard connection >= 0 else { return }
            state.connection.withLock { $0 = connection }
            var authenticated = false
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(connection, $0.baseAddress, $0.count) }
                guard count > 0 else { return }
                let received = state.bytes.withLock { bytes in
                    bytes += buffer[..<count]
                    return bytes
                }
                // The client pipelines its whole authentication; BEGIN ends it.
                if !authenticated, received.firstRange(of: Array("BEGIN\r\n".utf8)) != nil {
                    authenticated = true
                    let negotiated = received.firstRange(of: Array("NEGOTIATE_UNIX_FD\r\n".utf8)) != nil
                    let reply = Array(MuteBroker.authenticationReply(negotiated: negotiated).utf8)
                    guard reply.withUnsafeBytes({ write(connection, $0.baseAddress, $0.count) }) == reply.count else { return }
                }
            }
        }
    }

    /// Every byte the client sent so far, its authentication first.
    var received: [UInt8] { state.bytes.withLock { $0 } }

    func close() {
        shutdown(listener, Int32(SHUT_RDWR))
        let connection = state.connection.withLock { $0 }
        if connection >= 0 {
            shutdown(connection, Int32(SHUT_RDWR))
            Glibc.close(connection)
        }
        removeTree(directory)
    }
}
