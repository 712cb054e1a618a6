/// The JSON body of every error the server returns.
///
/// ```json
/// {"code":"mutationGap","message":"mutation 9 follows 5; resend from 6","lastAppliedMutationID":5}
/// ```
public struct ErrorResponse: Sendable, Hashable, Codable, Error {
    /// What went wrong, for code to switch on.
    public enum Code: String, Sendable, Hashable, Codable, CaseIterable {
        /// The request is malformed or breaks a rule; `message` says which.
        case badRequest
        /// No token, or a token that is invalid or expired (401).
        case unauthorized
        /// The token's user may not do this (403).
        case forbidden
        /// No such route or resource (404).
        case notFound
        /// The method is not allowed on this route (405).
        case methodNotAllowed
        /// The resource already exists (409).
        case alreadyExists
        /// A mutation id skipped ahead of the last applied one (409); resend
        /// from `lastAppliedMutationID + 1`.
        case mutationGap
        /// A mutation at or below the client's last applied id is not the
        /// one the server applied under that id (409): another copy of the
        /// client's database (a restored backup on a second device) pushed
        /// under the same client id. Take a new client id; the mutations
        /// before `differingMutationID` were applied.
        case clientIDReused
        /// The server lost the history the push's ``PushRequest/seen``
        /// cursor came from (409): it was restored from a backup or wiped.
        /// Pull first (the pages say ``PullPage/lostHistory``), then push.
        case historyLost
        /// The body is larger than the server accepts (413).
        case payloadTooLarge
        /// A resumed upload's `Upload-Offset` is not where the server's copy
        /// ends (409); the `Upload-Offset` header of the reply says where.
        case uploadOffsetMismatch
        /// An upload's bytes do not hash to the SHA-256 it was sent under
        /// (422); nothing of it was kept.
        case hashMismatch
        /// A `Range` outside the blob (416).
        case rangeNotSatisfiable
        /// The body is not `application/json` (415).
        case unsupportedMediaType
        /// Too many: more live streams than one user may hold, or more requests than the user's rate limit allows (429, with `Retry-After`).
        case tooManyRequests
        /// The server is shutting down or its store is unavailable (503).
        case unavailable
        /// A fault in the server (500). Never caused by input.
        case internalError
    }

    public var code: Code
    /// A sentence a person can act on.
    public var message: String
    /// For `mutationGap` and `clientIDReused`: the last id applied for this client.
    public var lastAppliedMutationID: Int64?
    /// For `clientIDReused`: the first mutation of the push that differs
    /// from the one applied under its id.
    public var differingMutationID: Int64?

    public init(code: Code, message: String, lastAppliedMutationID: Int64? = nil, differingMutationID: Int64? = nil) {
        self.code = code
        self.message = message
        self.lastAppliedMutationID = lastAppliedMutationID
        self.differingMutationID = differingMutationID
    }
}
