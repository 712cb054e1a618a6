/// The body of `POST /v1/pull`: the scopes a client follows and where it is in each.
///
/// ```swift
/// let pull = PullRequest(clientID: "5D6A…", scopes: [.init(scope: "user:alice", cursor: savedCursor)])
/// ```
public struct PullRequest: Sendable, Hashable, Codable {
    /// One followed scope and the cursor the last pull of it returned.
    public struct ScopeCursor: Sendable, Hashable, Codable {
        public var scope: String
        /// The opaque cursor from the previous page, or `nil` to start from scratch.
        public var cursor: String?
        /// The `noticeCursor` from the previous page, or `nil` for every
        /// conflict notice the server still keeps. Kept apart from `cursor`:
        /// a refetch of the scope does not deliver notices again.
        public var notices: String?
        /// With no `cursor`: the cursor the client held before it started
        /// the scope over (an app update that added a column, say). The page
        /// from scratch then tells whether the server lost that history
        /// (``PullPage/lostHistory``), so rows it lacks are sent back, not swept.
        public var previous: String?

        public init(scope: String, cursor: String? = nil, notices: String? = nil, previous: String? = nil) {
            self.scope = scope
            self.cursor = cursor
            self.notices = notices
            self.previous = previous
        }
    }

    public var clientID: String
    public var scopes: [ScopeCursor]
    /// The most rows to return per scope; the server's default when `nil`.
    public var limit: Int?

    public init(clientID: String, scopes: [ScopeCursor], limit: Int? = nil) {
        self.clientID = clientID
        self.scopes = scopes
        self.limit = limit
    }
}
