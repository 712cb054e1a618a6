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

    public init(clientID: String, mutations: [Mutation]) {
        self.clientID = clientID
        self.mutations = mutations
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

    public init(lastAppliedMutationID: Int64, results: [MutationResult]) {
        self.lastAppliedMutationID = lastAppliedMutationID
        self.results = results
    }
}
