extension SharedMirror {
    /// Explains the host's answer as if the link named `name` were its only way out: the
    /// internet destinations looked up bound to that link (`ip route get ... oif NAME`), for the
    /// history of each uplink. nil when no link has that name. Never waits, as `explain`.
    /// A lookup bound to a link finds an on-link path even where no route is left (the
    /// kernel assumes the destination is on that link): below the route layer it is exact, and
    /// a route that went has to be told from the host's available interfaces.
    package func explainUplink(_ name: String) -> Explanation? {
        withLock { mirror in
            guard let index = mirror.state.linkIndex(named: name) else { return nil }
            return mirror.explain(nil, outputInterface: index, uid: nil, target: "")
        }
    }
}
