import Reachability
#if canImport(Glibc)
import Glibc
#endif

// Signals are taken by the event loop (signalfd), so they must be blocked before any thread
// exists; otherwise one could land on a thread that does not block it and kill the process.
EventLoop.blockSignals([SIGTERM, SIGINT, SIGHUP])
Heap.giveLargeBuffersBack()

switch Options.parse(Array(CommandLine.arguments.dropFirst())) {
case let .exit(code):
    exit(code)
case let .run(options):
    Log.verbose = options.verbose
    exit(Daemon.main(options))
}
