/// How the state composes its stores (LinkStores, Announcements): each event of theirs goes to
/// its reducer, and the links it says moved are derived again.
extension NetworkState {
    package mutating func derive(_ moved: LinksMoved) {
        dirty.formUnion(moved.indices)
        for name in moved.names { if let index = linkIndexByName[name] { dirty.insert(index) } }
    }

    /// A verdict, judged against the links ready now.
    package mutating func take(_ verdict: TrafficVerdict) {
        let links = links
        derive(verdicts.take(verdict) { links[$0]?.link.isReady == true })
    }

    /// The kernel's facts the announcements are judged by.
    package var announcingLinks: Announcements.Links { Announcements.Links(entries: links, defaultRouters: defaultRouters) }

    package mutating func take(_ event: Announcements.Event) {
        derive(announcements.take(event, links: announcingLinks))
    }
}
