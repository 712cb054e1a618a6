import FerryProtocol

/// What the engine does about a failed request: the decision, apart from
/// the I/O that met it.
enum SyncFailure: Equatable, Sendable {
    /// The network or the server is struggling: wait and retry, queue untouched.
    case transient(retryAfter: Duration?)
    /// The server failed on the request (a 5xx other than 502–504): retried
    /// like a transient failure, but a mutation it keeps failing on alone is
    /// set aside (see ``SyncStateMachine``).
    case serverError(status: Int, message: String)
    /// The token is missing, invalid or expired: refresh it.
    case unauthorized
    /// A push skipped ahead of the server: renumber after `lastApplied`.
    case gap(lastApplied: Int64)
    /// Another copy of this database pushed under its client id: the
    /// mutations before `differingMutationID` were applied, that one and
    /// those after were not. Take a new identity.
    case clientIDReused(differingMutationID: Int64)
    /// The server lost the history the push was made on: pull, then push.
    case historyLost
    /// The server refuses the request as sent (4xx): retrying as is cannot help.
    case refused(status: Int, message: String)
    /// Not a transport failure: stop and report.
    case fatal

    init(_ error: any Error) {
        guard let error = error as? SyncTransportError else {
            self = .fatal
            return
        }
        switch error {
        case .unreachable, .timedOut, .invalidResponse:
            self = .transient(retryAfter: nil)
        case .http(let status, let body, let retryAfter):
            switch status {
            case 401:
                self = .unauthorized
            case 409 where body?.code == .mutationGap:
                self = .gap(lastApplied: body?.lastAppliedMutationID ?? 0)
            case 409 where body?.code == .clientIDReused:
                self = .clientIDReused(differingMutationID: body?.differingMutationID ?? 0)
            case 409 where body?.code == .historyLost:
                self = .historyLost
            case 408, 429, 502, 503, 504:
                self = .transient(retryAfter: retryAfter)
            case 500...599:
                self = .serverError(status: status, message: body?.message ?? "HTTP \(status)")
            default:
                self = .refused(status: status, message: body?.message ?? "HTTP \(status)")
            }
        }
    }
}
