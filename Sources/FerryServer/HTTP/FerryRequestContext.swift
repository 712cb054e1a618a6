import FerryProtocol
import Foundation
import Hummingbird
import NIOCore

/// The per-request context of the Ferry API: Hummingbird's core storage plus
/// the authenticated user.
public struct FerryRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The user the bearer token belongs to, once the authentication middleware checked it.
    public var userID: String?
    /// When the bearer token expires: a live stream it opened ends then.
    public var tokenExpires: Date?
    /// Roles the token grants in shared scopes, beside stored memberships.
    public var tokenGrants: [String: ScopeRole] = [:]
    /// The connection the request came on: a live stream ends when it closes.
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        userID = nil
        tokenExpires = nil
        channel = source.channel
    }

    /// The authenticated user; routes behind ``AuthMiddleware`` always have one.
    func requireUser() throws(FerryServerError) -> String {
        guard let userID else { throw FerryServerError(.unauthorized, "this route needs a bearer token") }
        return userID
    }
}
