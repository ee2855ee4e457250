import CSystemd
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Reads callers' arguments before the loop does. sd-bus checks a string argument's UTF-8 whole
/// before handing it over, and no public call gives a string's length first, so one 32 MiB
/// string held reachd's loop 110 ms before its length could be refused. Here a call with
/// arguments is first read through on one of two reader threads, which measures every string
/// (`StringMeasures`); then the loop runs the method, whose bounded reading (`BusMessage
/// .readString` and the others) refuses a string measured longer than `maximumStringBytes`
/// from its measure, without reading it again. A string the loop does read is at most that
/// long, so a call costs the loop microseconds whatever its size, and every refusal is still
/// the method's own, naming the argument and its bound.
///
/// A caller's calls are answered in the order sent: while one of its calls is being read, its
/// next ones (argument-less ones too) wait behind it. Callers are read independently of each
/// other, so one sending 32 MiB holds up one reader, not every caller.
///
/// The reader only reads the message: the loop takes its reference before handing it over and
/// drops it after, sd-bus's reference counts not being atomic. Properties calls, which sd-bus
/// would answer itself, are taken and answered here (`ArgumentScreen+Properties.swift`); the
/// reading is `ArgumentReading`.
final class ArgumentScreen {
    /// Strings longer are refused from their measure, unread by the loop; reachd's longest
    /// bounded argument is 255 bytes.
    static let maximumStringBytes = 4096
    /// Values read through in one call, containers and their contents counted; strings past
    /// them are refused unread. WatchPath's options, the largest, hold a few dozen.
    static let maximumValues = 4096
    /// Readers: one caller's 32 MiB leaves the other to every other caller.
    static let readers = 2

    private struct Pending {
        let call: OwnedBusMessage
        /// The object whose method was called; nil for a Properties call (`answerProperties`).
        let registration: BusRegistration?
        let sender: String
    }

    /// The objects served, by path: whose properties Properties calls read.
    var served: [String: [BusRegistration]] = [:]
    var propertiesFilter: BusSlot?

    /// Made by `start`: a connection that only calls (reachctl, the library) never has one.
    private(set) var work: ScreenWork?
    private var wake: EventSource?
    private var pending: [UInt64: Pending] = [:]
    /// Calls per sender that are being read or waiting to be answered.
    private var inFlight: [String: Int] = [:]
    private var nextID: UInt64 = 0
    private var readersStarted = 0

    /// Starts answering screened calls on `loop`; until then every call is answered at once.
    func start(on loop: EventLoop) throws(SystemError) {
        let work = try ScreenWork()
        wake = try loop.watch(fd: work.pipe.fd, events: .readable) { [unowned self] _ in self.answerRead() }
        self.work = work
    }

    deinit {
        wake?.cancel()
        work?.close(readers: readersStarted)
    }

    /// Whether `call` goes through a reader: it has arguments, or its sender has calls there.
    func takes(_ call: OpaquePointer) -> Bool {
        guard work != nil else { return false }
        if let signature = sd_bus_message_get_signature(call, 1), signature.pointee != 0 { return true }
        return inFlight[Self.sender(of: call)] != nil
    }

    /// Hands `call` to a reader; `registration` answers it on the loop once it was read
    /// (nil: a Properties call, answered here).
    func submit(_ call: OpaquePointer, to registration: BusRegistration?) {
        guard let work else { return }
        let sender = Self.sender(of: call)
        nextID += 1
        pending[nextID] = Pending(call: OwnedBusMessage(retaining: BusMessage(call)), registration: registration, sender: sender)
        inFlight[sender, default: 0] += 1
        work.submit(ScreenWork.Job(id: nextID, sender: sender, message: UncheckedSendable(call)))
        startReaders(work)
    }

    /// Readers start with the first call that needs one. Should no thread be had at all, the
    /// loop reads the call itself, as it did before there were readers.
    private func startReaders(_ work: ScreenWork) {
        while readersStarted < Self.readers, (try? DedicatedThread.start { work.read() }) != nil { readersStarted += 1 }
        if readersStarted == 0, work.readOne() { answerRead() }
    }

    /// On the loop: answers the calls read since the last time, in the order they were read.
    private func answerRead() {
        guard let work else { return }
        work.pipe.drain()
        for (id, measures) in work.takeRead() {
            guard let waiting = pending.removeValue(forKey: id) else { continue }
            if let count = inFlight[waiting.sender], count > 1 { inFlight[waiting.sender] = count - 1 } else { inFlight[waiting.sender] = nil }
            let call = BusMessage(waiting.call.message.pointer, measured: MeasuredStrings(measures))
            guard let registration = waiting.registration else {
                answerProperties(call)
                continue
            }
            if registration.isServed {
                registration.answerLater(call)
            } else {
                sendError(BusError(name: "org.freedesktop.DBus.Error.UnknownObject", message: "the object is gone"), answering: call.pointer)
            }
        }
    }

    private static func sender(of call: OpaquePointer) -> String {
        sd_bus_message_get_sender(call).map { String(cString: $0) } ?? ""
    }
}

/// What the loop and the readers share: calls to read and what came of them.
final class ScreenWork: Sendable {
    struct Job: Sendable {
        let id: UInt64
        let sender: String
        let message: UncheckedSendable<OpaquePointer>
    }

    private struct State {
        var jobs: [Job] = []
        /// Senders one of whose calls a reader has now.
        var reading: Set<String> = []
        var read: [(UInt64, StringMeasures)] = []
        var isClosed = false
    }

    private let state = Mutex(State())
    private let jobsWaiting = DispatchSemaphore(value: 0)
    /// Readable while read calls wait for the loop.
    let pipe: WakeUpPipe

    init() throws(SystemError) {
        pipe = try WakeUpPipe()
    }

    func submit(_ job: Job) {
        state.withLock { $0.jobs.append(job) }
        jobsWaiting.signal()
    }

    func takeRead() -> [(UInt64, StringMeasures)] {
        state.withLock { state in
            defer { state.read = [] }
            return state.read
        }
    }

    /// A reader's life: `readOne`, or waiting for a call when there is none for it, until
    /// the screen is gone.
    func read() {
        while !state.withLock({ $0.isClosed }) {
            if !readOne() { jobsWaiting.wait() }
        }
    }

    /// Ends the `readers` readers once they finish what they read now.
    func close(readers: Int) {
        state.withLock { $0.isClosed = true }
        for _ in 0..<readers { jobsWaiting.signal() }
    }

    /// Reads the oldest call whose sender no other reader has; false when there is none.
    func readOne() -> Bool {
        let job = state.withLock { state -> Job? in
            guard let index = state.jobs.firstIndex(where: { !state.reading.contains($0.sender) }) else { return nil }
            state.reading.insert(state.jobs[index].sender)
            return state.jobs.remove(at: index)
        }
        guard let job else { return false }
        let measures = ArgumentReading.read(job.message.value)
        state.withLock { state in
            state.reading.remove(job.sender)
            state.read.append((job.id, measures))
        }
        pipe.signal()
        return true
    }
}
