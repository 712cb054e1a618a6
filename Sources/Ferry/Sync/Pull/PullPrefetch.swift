import FerryProtocol

/// A pull asked for before the step that needs it: the request the next
/// pull will send if the page in hand applies as expected, so the server's
/// answer travels while the device applies. The next pull takes it only if
/// its own request is the same, to the byte; otherwise it is cancelled, so
/// what a sync applies never depends on it (it is a pull sent early, and an
/// answer may always arrive late).
struct PullPrefetch {
    let request: PullRequest
    let task: Task<PullResponse, any Error>

    /// The request that follows `reply`, as the state machine asks for it
    /// when every page applies: the scopes with more to come, from the
    /// cursors the pages end at. `nil` when none has more, or a page
    /// starts a scope over (its apply decides what comes next).
    static func nextRequest(after reply: PullResponse, of request: PullRequest, cursors: ScopeCursors) -> PullRequest? {
        let more = reply.pages.filter(\.hasMore).map(\.scope)
        guard !more.isEmpty, !reply.pages.contains(where: { $0.reset || $0.lostHistory }) else { return nil }
        var cursors = cursors
        for page in reply.pages { cursors.advance(page) }
        return PullRequest(clientID: request.clientID, scopes: more.map { cursors.request(for: $0) }, limit: request.limit)
    }
}
