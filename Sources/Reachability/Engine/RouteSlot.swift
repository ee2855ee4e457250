/// The kernel's identity for NLM_F_REPLACE: the same table, destination, metric and TOS.
package struct RouteSlot: Hashable, Sendable {
    package var table: UInt32
    package var destination: IPPrefix
    package var metric: UInt32
    package var tos: UInt8

    package init(_ route: Route) {
        table = route.table
        destination = route.destination
        metric = route.metric
        tos = route.tos
    }
}
