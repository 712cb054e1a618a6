import FerryProtocol

/// The rule of reading a pull ahead: which pull a client sends after a page
/// with more to come, and when the pull it did send is that one.
///
/// A store that answers a pull with more to come may read the next one
/// before it is asked, while the page is on the wire, and hand that answer
/// to the pull when it comes, but only if the store has not changed since
/// the read (the store checks that) and the pull is the one read ahead
/// (``matches(_:predicted:noticeStart:epoch:)``). So the answer is always
/// the one a read at that moment would give, to the byte.
///
/// ```swift
/// if let next = PullReadAhead.nextRequest(after: answer, of: request) {
///     …   // read `next` in the background
/// }
/// …
/// if PullReadAhead.matches(asked, predicted: next, noticeStart: start, epoch: epoch) { … }   // hand its answer over
/// ```
package enum PullReadAhead {
    /// The pull a Ferry client sends after `answer` when every page applies
    /// (as its engine's prefetch asks for it): the scopes with more to
    /// come, from the cursors their pages end at, each notice cursor moved
    /// where its page's stands, at the same limit. `nil` when no page has
    /// more, or one starts its scope over (the client's apply decides what
    /// comes next).
    package static func nextRequest(after answer: EncodedPullResponse, of request: PullRequest) -> PullRequest? {
        guard answer.pages.contains(where: \.hasMore), !answer.pages.contains(where: { $0.reset || $0.lostHistory }) else { return nil }
        var scopes: [PullRequest.ScopeCursor] = []
        for page in answer.pages where page.hasMore {
            let asked = request.scopes.first { $0.scope == page.scope }
            scopes.append(PullRequest.ScopeCursor(scope: page.scope, cursor: page.cursor, notices: page.noticeCursor ?? asked?.notices))
        }
        return PullRequest(clientID: request.clientID, scopes: scopes, limit: request.limit)
    }

    /// Whether `asked` is the pull `predicted` names, so the answer read
    /// for `predicted` is the one `asked` gets. A scope sent without a
    /// notice cursor starts its notices at `noticeStart` (where the read
    /// ahead found them start for this client), so it is the same pull as
    /// one whose notice cursor stands there.
    package static func matches(_ asked: PullRequest, predicted: PullRequest, noticeStart: ChangePosition, epoch: String) -> Bool {
        guard asked.clientID == predicted.clientID, asked.limit == predicted.limit, asked.scopes.count == predicted.scopes.count else {
            return false
        }
        let start = NoticeCursor.text(noticeStart, epoch: epoch)
        return zip(asked.scopes, predicted.scopes).allSatisfy { asked, predicted in
            asked.scope == predicted.scope && asked.cursor == predicted.cursor && asked.previous == predicted.previous
                && (asked.notices ?? start) == predicted.notices
        }
    }
}
