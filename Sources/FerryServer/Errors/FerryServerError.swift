import FerryProtocol

/// The one error type of `FerryServer`: a code to switch on, the HTTP status
/// it answers with, and a message a person can act on.
///
/// ```swift
/// do { try await store.push(request, userID: "alice", tables: tables) }
/// catch let error as FerryServerError where error.code == .mutationGap {
///     print("resend from", error.lastAppliedMutationID! + 1)
/// }
/// ```
public struct FerryServerError: Error, Sendable, Hashable, CustomStringConvertible {
    public typealias Code = ErrorResponse.Code

    public var code: Code
    public var message: String
    /// For `mutationGap`: the last id the server applied for the client.
    public var lastAppliedMutationID: Int64?
    /// For `clientIDReused`: the first mutation of the push that is not
    /// the one applied under its id.
    public var differingMutationID: Int64?
    /// For `tooManyRequests` from a rate limit: when to try again (`Retry-After`).
    public var retryAfter: Duration?

    public init(
        _ code: Code, _ message: String, lastAppliedMutationID: Int64? = nil, differingMutationID: Int64? = nil,
        retryAfter: Duration? = nil
    ) {
        self.code = code
        self.message = message
        self.lastAppliedMutationID = lastAppliedMutationID
        self.differingMutationID = differingMutationID
        self.retryAfter = retryAfter
    }

    /// The HTTP status this error answers with.
    public var status: Int {
        switch code {
        case .badRequest: 400
        case .unauthorized: 401
        case .forbidden: 403
        case .notFound: 404
        case .methodNotAllowed: 405
        case .alreadyExists, .mutationGap, .clientIDReused, .historyLost, .uploadOffsetMismatch: 409
        case .payloadTooLarge: 413
        case .rangeNotSatisfiable: 416
        case .hashMismatch: 422
        case .unsupportedMediaType: 415
        case .tooManyRequests: 429
        case .unavailable: 503
        case .internalError: 500
        }
    }

    /// The wire form.
    public var response: ErrorResponse {
        ErrorResponse(
            code: code, message: message, lastAppliedMutationID: lastAppliedMutationID, differingMutationID: differingMutationID)
    }

    public var description: String { "\(code.rawValue): \(message)" }

    static func badRequest(_ message: String) -> Self { Self(.badRequest, message) }

    /// The one answer for a scope the caller may not use: the same whether the
    /// scope exists or not, so it reveals nothing.
    static func noAccess(to scope: String, needs role: ScopeRole) -> Self {
        Self(.forbidden, "you do not have \(role.rawValue) access to scope `\(scope)`")
    }
}
