import FerryProtocol
import Hummingbird

/// Scopes and members: what `ferry-server grant` does, over HTTP.
extension AdminAPI {
    func scopes(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let query = try AdminQuery(request, allowed: ["after", "limit"])
        let limit = try query.limit()
        let after = try query.value("after", ScopeName.isValid, "a scope name")
        let scopes = try await store.scopes(after: after, limit: limit)
        return JSONResponse.make(ScopeSummaryPage(scopes: scopes, next: scopes.count == limit ? scopes.last?.scope : nil))
    }

    func scope(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let scope = try Self.scopeParameter(context)
        guard let summary = try await store.scope(scope) else { throw Self.noScope(scope) }
        return JSONResponse.make(summary)
    }

    func createScope(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(AdminCreateScopeRequest.self, schema: "AdminCreateScopeRequest", schemas: schemas, limits: limits)
        guard ScopeName.owner(of: body.scope) == nil else {
            throw FerryServerError(.alreadyExists, "`\(ScopeName.userPrefix)…` scopes are personal and exist already; pick another name")
        }
        try await store.createScope(body.scope, owner: body.owner)
        return JSONResponse.make(ScopeSummary(scope: body.scope, owner: body.owner, members: []), status: .created)
    }

    func setMember(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let (scope, member) = try Self.membership(context)
        let body = try await request.decodeJSON(MemberRequest.self, schema: "MemberRequest", schemas: schemas, limits: limits)
        guard let summary = try await store.scope(scope) else { throw Self.noScope(scope) }
        guard summary.owner != member else {
            throw FerryServerError.badRequest("`\(member)` owns `\(scope)`: an owner always has write access, and it cannot change")
        }
        try await store.setMember(member, role: body.role, in: scope)
        return JSONResponse.make(ScopeMember(userID: member, role: body.role))
    }

    /// Removes a member. Their live streams of the scope end with `revoked`
    /// (on this instance at once, told as news; on others at the next news
    /// or heartbeat), and pulls are refused.
    func removeMember(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let (scope, member) = try Self.membership(context)
        guard try await store.removeMember(member, from: scope) else {
            throw FerryServerError(.notFound, "`\(member)` is not a member of `\(scope)`")
        }
        store.changeFeed.publish([scope])
        return Response(status: .noContent)
    }

    private static func membership(_ context: FerryRequestContext) throws -> (scope: String, member: String) {
        let scope = try scopeParameter(context)
        let member = try SyncAPI.pathParameter("user", context)
        guard ScopeName.isValidUserID(member) else {
            throw FerryServerError.badRequest("user id \(MutationCheck.quoted(member)) is not a valid user id")
        }
        guard ScopeName.owner(of: scope) == nil else {
            throw FerryServerError(.notFound, "`\(scope)` is a personal scope: it has no members besides its user")
        }
        return (scope, member)
    }

    static func noScope(_ scope: String) -> FerryServerError {
        FerryServerError(.notFound, "there is no shared scope `\(scope)`")
    }
}
