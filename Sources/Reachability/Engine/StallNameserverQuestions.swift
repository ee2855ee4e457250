/// reachd's own questions to each link's nameserver, as the stall evaluator asks for them.
///
/// Asked while a link's traffic is suspected: unanswered for the patience, the silence counts as
/// one more failing connection (`StallEvaluator`). And asked ahead, when a socket's new data
/// stopped and the next poll looks at it again (`PeerResending.lookAgain`): if that look finds
/// the peer sending again, the silence has lasted its patience by then. Asked only at the look,
/// a lone download whose ACKs die was flagged one patience (2 s) after the look that saw it.
///
/// A question asked ahead speaks for no failure: its answer does not stand for the failures of
/// then (a lone user's download that dies next still gets its question). A link is asked ahead
/// at most once every `StallEvaluator.answeredPause`, a question kept while it stays unanswered
/// and wanted.
struct StallNameserverQuestions: Sendable {
    /// When each link's nameserver last answered a question asked while suspected, and so
    /// explained the failures of then (a dead peer's): asked again only for a failure that began
    /// since, or after `answeredPause`.
    private(set) var answers: [Int32: Duration] = [:]
    /// When each link was last asked ahead.
    private var aheadSince: [Int32: Duration] = [:]
    /// The links whose question was asked ahead and is still unanswered.
    private var askedAhead: Set<Int32> = []

    /// The core's answers taken: the links whose question went unanswered for `patience`.
    /// Silence counts whatever the question was asked for: it is the same question.
    mutating func take(_ nameservers: [StallNameserverAnswer], patience: Duration, at now: Duration) -> Set<Int32> {
        var unanswered: Set<Int32> = []
        for answer in nameservers {
            let link = answer.interfaceIndex
            if answer.answered {
                if askedAhead.remove(link) == nil { answers[link] = now }
            } else if now - answer.since >= patience {
                unanswered.insert(link)
            }
        }
        answers = answers.filter { now - $0.value < StallEvaluator.answeredPause }
        aheadSince = aheadSince.filter { now - $0.value < StallEvaluator.answeredPause }
        return unanswered
    }

    /// The links to ask now: the suspected ones the evaluator chose, and ahead those with a socket
    /// to look at again, whose question asked ahead goes on or whose last began `answeredPause`
    /// ago, and whose nameserver has not answered a suspected link's question lately.
    mutating func asking(suspected: [Int32], ahead: Set<Int32>, at now: Duration) -> [Int32] {
        let early = ahead.subtracting(suspected).filter {
            askedAhead.contains($0) || (answers[$0] == nil && aheadSince[$0] == nil)
        }
        for link in early where !askedAhead.contains(link) { aheadSince[link] = now }
        askedAhead = early
        return suspected + early.sorted()
    }
}
