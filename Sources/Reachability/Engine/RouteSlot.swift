/// The kernel's identity for NLM_F_REPLACE: the same table, destination, metric and TOS.
struct RouteSlot: Hashable, Sendable {
    var table: UInt32
    var destination: IPPrefix
    var metric: UInt32
    var tos: UInt8

    init(_ route: Route) {
        table = route.table
        destination = route.destination
        metric = route.metric
        tos = route.tos
    }
}
