import Reachability

/// The network's own captive-portal API (RFC 8908), per uplink: each ready link that announces an
/// API URI (a router's option 37, DHCP's 114 or 103) is asked through `HTTPExchanges` (libcurl's thread),
/// bound to that link, and each answer goes back into the core as an input (`record(portal:)`),
/// never into the state. Asked again before the session runs out: at the start of the lead
/// time (`[Portal] EndingLead=`), then every `shortInterval` until a renewal or the end; every
/// `shortInterval` while captive (someone is logging in); every `longInterval` otherwise.
/// Nothing is asked of anyone the network did not name. Loop-thread only.
final class PortalSessions {
    static let shortInterval: Duration = .seconds(15)
    static let longInterval: Duration = .seconds(600)
    /// After a refused answer; each refusal is one journal line (the same again is not repeated).
    static let retryInterval: Duration = .seconds(60)

    private struct Link {
        var name: String
        var api: String
        var asking = false
        var timer: (any LoopSource)?
        var lastRefusal: String?
        /// The last answer told, so the journal hears of changes only.
        var told: PortalAPIReply?
    }

    private let inputs: any CoreInputs
    private let loop: EventLoop
    private let exchanges: HTTPExchanges
    private var settings: PortalSettings
    private var links: [Int32: Link] = [:]
    /// After each answer is recorded: an answer that changes nothing clients see (`{"captive":
    /// false}`) is no update, yet the probes keep quiet from then on.
    var answered: (() -> Void)?

    init(inputs: any CoreInputs, loop: EventLoop, exchanges: HTTPExchanges, settings: PortalSettings) {
        self.inputs = inputs
        self.loop = loop
        self.exchanges = exchanges
        self.settings = settings
    }

    /// A reload: the lead time counts from the next answer.
    func configure(_ settings: PortalSettings) {
        self.settings = settings
    }

    /// The core's follower: links that announce an API are asked; those that stopped are let go.
    func follow(_ update: CoreUpdate) {
        var announced: [Int32: (name: String, api: String)] = [:]
        for interface in update.snapshot.interfaces where !interface.portal.isEmpty && interface.portal != AnnouncedPortal.unrestricted {
            announced[interface.index] = (interface.name, interface.portal)
        }
        for (index, link) in links where announced[index]?.api != link.api || announced[index]?.name != link.name {
            link.timer?.cancel()
            links.removeValue(forKey: index)
            // The answer goes with the announcement: should the link announce the same API again,
            // nothing of the old session shows before the API is asked anew.
            inputs.record(portal: index, api: link.api, nil)
        }
        for (index, said) in announced where links[index] == nil {
            links[index] = Link(name: said.name, api: said.api)
            ask(index)
        }
    }

    private func ask(_ index: Int32) {
        guard let link = links[index], !link.asking else { return }
        let question = PortalQuestion(interfaceIndex: index, interfaceName: link.name, api: link.api, asked: .now)
        do {
            _ = try exchanges.ask(PortalAPI.exchange(question)) { [unowned self] answer in
                self.take(question, PortalAPI.read(answer))
            }
            links[index]?.asking = true
        } catch {
            Log.warning("portal API \(link.api.inertExcerpt()) on \(link.name.inertExcerpt()) not asked: \(error)")
        }
    }

    private func take(_ question: PortalQuestion, _ result: Result<PortalAPIReply, PortalAPIRefusal>) {
        let index = question.interfaceIndex
        guard var link = links[index], link.api == question.api else { return }  // let go meanwhile
        link.asking = false
        let now = ContinuousClock.now
        let next: ContinuousClock.Instant
        switch result {
        case let .success(answer):
            let session = Self.session(answer, of: question, now: now, lead: settings.endingLead)
            if link.told != answer {
                Log.event(.probe, "portal API on \(link.name): \(Self.describe(answer))")
            }
            (link.lastRefusal, link.told) = (nil, answer)
            inputs.record(portal: index, api: question.api, session.answer)
            answered?()
            next = session.next
        case let .failure(refusal):
            if link.lastRefusal != refusal.reason {
                Log.event(.probe, "portal API \(question.api.inertExcerpt()) on \(link.name) refused: \(refusal.reason)", warning: true)
            }
            link.lastRefusal = refusal.reason
            next = now + Self.retryInterval
        }
        if link.timer == nil {
            link.timer = try? loop.addTimer(urgent: false) { [unowned self] in self.ask(index) }
        }
        link.timer?.schedule(at: next)
        links[index] = link
    }

    /// The session to publish and when to ask again.
    static func session(
        _ answer: PortalAPIReply, of question: PortalQuestion, now: ContinuousClock.Instant, lead: Duration
    ) -> (answer: PortalAnswer, next: ContinuousClock.Instant) {
        var session = PortalSession(
            captive: answer.captive, loginURL: answer.userPortalURL, venueURL: answer.venueInfoURL,
            bytesRemaining: answer.bytesRemaining ?? -1, canExtend: answer.canExtendSession)
        var endingAt: ContinuousClock.Instant?
        var next = now + (answer.captive ? shortInterval : longInterval)
        if let seconds = answer.secondsRemaining {
            let end = question.asked + .seconds(seconds)
            let wall = SystemClock.wallSeconds() + Double((end - now).components.seconds)
            session.ends = wall > 0 ? UInt64(wall * 1_000_000) : 0
            endingAt = end - lead
            session.ending = end - lead <= now
            if !answer.captive {
                // At the lead's start, then often until a renewal or the end.
                next = end - lead > now + shortInterval ? min(end - lead, now + longInterval) : now + shortInterval
            }
        }
        return (PortalAnswer(interfaceIndex: question.interfaceIndex, api: question.api, session: session, endingAt: endingAt), next)
    }

    /// One journal line's worth: captive or not, the login page, the time and bytes left.
    static func describe(_ answer: PortalAPIReply) -> String {
        var words = [answer.captive ? "captive" : "not captive"]
        if !answer.userPortalURL.isEmpty { words.append("login at \(answer.userPortalURL)") }
        if let seconds = answer.secondsRemaining { words.append("\(seconds) s left") }
        if let bytes = answer.bytesRemaining { words.append("\(bytes) bytes left") }
        return words.joined(separator: ", ")
    }
}
