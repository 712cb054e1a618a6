/// The body of `POST /v1/push`: a client's pending mutations, in order.
///
/// ```swift
/// let push = PushRequest(clientID: "5D6A…", mutations: [mutation])
/// let body = try JSONEncoder().encode(push)
/// ```
public struct PushRequest: Sendable, Hashable, Codable {
    /// The device's stable id. Every mutation in the request is this client's.
    public var clientID: String
    /// Mutations in strictly increasing `mutationID` order.
    public var mutations: [Mutation]
    /// A pull cursor the client holds: the history its mutations were made
    /// on. A server that lost it refuses the push (`historyLost`), so a
    /// mutation based on rows the server no longer has never lands as a
    /// partial row there.
    public var seen: Seen?
    /// Conflict notices this client's user resolved or dismissed here: the
    /// server tells the user's other devices, which drop their copies. A
    /// push may carry only these, with no mutations.
    public var settled: [SettledNotice]?

    /// A conflict notice the user settled, by its scope and id.
    public struct SettledNotice: Sendable, Hashable, Codable {
        public var scope: String
        public var id: String

        public init(scope: String, id: String) {
            self.scope = scope
            self.id = id
        }
    }

    /// A pull cursor, and the scope it belongs to.
    public struct Seen: Sendable, Hashable, Codable {
        public var scope: String
        public var cursor: String

        public init(scope: String, cursor: String) {
            self.scope = scope
            self.cursor = cursor
        }
    }

    public init(clientID: String, mutations: [Mutation], seen: Seen? = nil, settled: [SettledNotice]? = nil) {
        self.clientID = clientID
        self.mutations = mutations
        self.seen = seen
        self.settled = settled
    }
}

/// The reply to a push.
///
/// `lastAppliedMutationID` is the highest id the server has applied for this
/// client, counting this push. Every pending mutation at or below it is done;
/// the results say how each one of this request ended.
public struct PushResponse: Sendable, Hashable, Codable {
    public var lastAppliedMutationID: Int64
    public var results: [MutationResult]
    /// Scopes where the push's rows are the only changes in a range of the
    /// store's history, each applied as sent: a client whose cursor for the
    /// scope lies in that range holds every change up to the range's end
    /// already, and moves its cursor there without pulling its own rows
    /// back. `nil` from a store that cannot tell (the PostgreSQL store).
    ///
    /// ```swift
    /// let reply = try await transport.push(request, token: token)
    /// reply.covered   // [CoveredScope(scope: "user:alice", after: "…", cursor: "…")]: a client at `after` moves to `cursor`
    /// ```
    public var covered: [CoveredScope]?

    /// A scope's range that holds only a push's own rows: every change to
    /// `scope` after cursor `after`, up to cursor `cursor`, is the push's.
    public struct CoveredScope: Sendable, Hashable, Codable {
        public var scope: String
        public var after: String
        public var cursor: String
        /// The scope held no row before the push, not even a deleted one: a
        /// client that never pulled it, whose first pull would bring the
        /// push's rows alone, may move to `cursor` too. `nil` means `false`.
        public var emptyBefore: Bool?

        public init(scope: String, after: String, cursor: String, emptyBefore: Bool? = nil) {
            self.scope = scope
            self.after = after
            self.cursor = cursor
            self.emptyBefore = emptyBefore
        }
    }

    public init(lastAppliedMutationID: Int64, results: [MutationResult], covered: [CoveredScope]? = nil) {
        self.lastAppliedMutationID = lastAppliedMutationID
        self.results = results
        self.covered = covered
    }
}
