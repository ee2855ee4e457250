import Foundation
import Testing
@testable import Reachability

/// TCPSocketDumper driven the way an event loop drives it: `start()`, then `readable()` each time
/// poll(2) says the descriptor is readable, never blocking. With 300 loopback connections of the
/// test's own (600 sockets, several datagrams per dump), both request kinds, and a dump abandoned
/// half-way whose leftovers must not leak into the next one.
@Suite struct SocketDiagDumperTests {
    /// `count` loopback connections (both ends open); their client ports.
    final class Connections {
        var descriptors: [Int32] = []
        var ports: Set<UInt16> = []
        let serverPort: UInt16

        init(_ count: Int) throws {
            let loopback = IPAddress("127.0.0.1")!
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            descriptors.append(listener)
            guard loopback.withSocketAddress(port: 0, { bind(listener, $0, $1) }) == 0, listen(listener, Int32(count)) == 0 else {
                throw SystemError("bind/listen")
            }
            var bound = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
            serverPort = UInt16(bigEndian: bound.sin_port)
            for _ in 0..<count {
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                descriptors.append(fd)
                guard loopback.withSocketAddress(port: serverPort, { connect(fd, $0, $1) }) == 0 else { throw SystemError("connect") }
                descriptors.append(accept(listener, nil, nil))
                var local = sockaddr_in()
                var size = socklen_t(MemoryLayout<sockaddr_in>.size)
                _ = withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &size) } }
                ports.insert(UInt16(bigEndian: local.sin_port))
            }
        }

        deinit { for fd in descriptors { close(fd) } }

        /// The client ends among `samples` (source port one of ours, toward our listener).
        func ours(_ samples: [TCPSocketSample]) -> [TCPSocketSample] {
            samples.filter { $0.destinationPort == serverPort && ports.contains($0.sourcePort) }
        }
    }

    /// Waits for readability and calls readable() until the samples come; counts the calls.
    static func complete(_ dumper: inout TCPSocketDumper) throws -> (samples: [TCPSocketSample], wakeUps: Int) {
        var wakeUps = 0
        while true {
            var descriptor = pollfd(fd: dumper.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 5000) == 1 else { throw SocketDiagError.timedOut }
            wakeUps += 1
            if let samples = try dumper.readable() { return (samples, wakeUps) }
        }
    }

    @Test(arguments: [TCPSocketDumper.Request.perFamily, .bothFamilies])
    func drivenByReadability(request: TCPSocketDumper.Request) throws {
        let connections = try Connections(300)
        var dumper = try TCPSocketDumper(request: request)
        let idle = dumper.isDumping
        try dumper.start()
        let started = dumper.isDumping
        let (samples, wakeUps) = try Self.complete(&dumper)
        let finished = dumper.isDumping
        #expect(!idle && started && !finished)
        #expect(wakeUps >= 1)
        let ours = connections.ours(samples)
        #expect(ours.count == 300)
        #expect(Set(ours.map(\.cookie)).count == 300, "each socket once")
        #expect(ours.allSatisfy { $0.state == .established && $0.counters != nil })
        // Nothing more to read once it is complete; readable() on an idle dumper returns nil.
        let nothing = try dumper.readable()
        #expect(nothing == nil)
    }

    @Test func anAbandonedDumpLeavesNothingBehind() throws {
        let connections = try Connections(300)
        var dumper = try TCPSocketDumper()
        try dumper.start()
        // Restarted before a byte was read: the first dump's datagrams are drained, and any it
        // still queues carry the old sequence number.
        try dumper.start()
        let (first, _) = try Self.complete(&dumper)
        #expect(connections.ours(first).count == 300)
        #expect(Set(first.map(\.cookie)).count == first.count, "no socket twice")
        // And the next poll is whole again.
        try dumper.start()
        let (second, _) = try Self.complete(&dumper)
        #expect(Set(connections.ours(second).map(\.cookie)) == Set(connections.ours(first).map(\.cookie)))
    }
}
