import FerryProtocol
import Hummingbird

/// `GET /v1/scopes`, `POST /v1/scopes`, and `PUT` and `DELETE /v1/scopes/{scope}/members/{user}`.
extension SyncAPI {
    func listScopes(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let userID = try context.requireUser()
        let personal = ScopeMembership(scope: ScopeName.user(userID), role: .write, owner: true)
        let stored = try await store.memberships(of: userID)
        // The token's grants beside the stored memberships, the higher role where both name a scope.
        var shared = Dictionary(uniqueKeysWithValues: stored.map { ($0.scope, $0) })
        for (scope, role) in context.tokenGrants where (shared[scope].map { !$0.owner && $0.role < role } ?? true) {
            shared[scope] = ScopeMembership(scope: scope, role: role, owner: false)
        }
        return JSONResponse.make(ScopeList(scopes: [personal] + shared.values.sorted { $0.scope < $1.scope }))
    }

    /// Creates a shared scope named `<label>@<caller>`: a name can only be
    /// taken in one's own namespace, so trying one tells nothing about any
    /// other user's scopes.
    func createScope(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let userID = try context.requireUser()
        let body = try await request.decodeJSON(CreateScopeRequest.self, schema: "CreateScopeRequest", schemas: schemas, limits: limits)
        // The schema has checked the form `<label>@<user id>`.
        guard ScopeName.owner(of: body.scope) == nil else {
            throw FerryServerError(.alreadyExists, "`\(ScopeName.userPrefix)…` scopes are personal and exist already; pick another name")
        }
        guard ScopeName.namespace(of: body.scope) == userID else {
            throw FerryServerError(
                .forbidden,
                "you create scopes in your own namespace only: <label>@<your user id>, such as `\(ScopeName.shared("groceries", ownedBy: userID))`"
            )
        }
        try await store.createScope(body.scope, owner: userID)
        return JSONResponse.make(ScopeMembership(scope: body.scope, role: .write, owner: true), status: .created)
    }

    func setMember(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let userID = try context.requireUser()
        let scope = try Self.pathParameter("scope", context)
        let member = try Self.pathParameter("user", context)
        let body = try await request.decodeJSON(MemberRequest.self, schema: "MemberRequest", schemas: schemas, limits: limits)
        guard ScopeName.isValid(scope), ScopeName.owner(of: scope) == nil,
            try await store.membership(of: userID, in: scope)?.owner == true
        else {
            throw FerryServerError(.forbidden, "only the owner of a shared scope may add members to it")
        }
        guard ScopeName.isValidUserID(member) else {
            throw FerryServerError.badRequest("user id \(MutationCheck.quoted(member)) is not a valid user id")
        }
        guard member != userID else {
            throw FerryServerError.badRequest("you own `\(scope)`: an owner always has write access, and it cannot change")
        }
        try await store.setMember(member, role: body.role, in: scope)
        return JSONResponse.make(ScopeMembership(scope: scope, role: body.role, owner: false))
    }

    /// The owner takes a member out: their pulls of the scope are refused
    /// from then on, and their live streams of it end with `revoked` (told
    /// as news to this instance's streams, and to the others' at the next
    /// news or heartbeat), as the admin API's removal does.
    func removeMember(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let userID = try context.requireUser()
        let scope = try Self.pathParameter("scope", context)
        let member = try Self.pathParameter("user", context)
        guard ScopeName.isValid(scope), ScopeName.owner(of: scope) == nil,
            try await store.membership(of: userID, in: scope)?.owner == true
        else {
            throw FerryServerError(.forbidden, "only the owner of a shared scope may remove members from it")
        }
        guard ScopeName.isValidUserID(member) else {
            throw FerryServerError.badRequest("user id \(MutationCheck.quoted(member)) is not a valid user id")
        }
        guard member != userID else {
            throw FerryServerError.badRequest("you own `\(scope)`: an owner cannot leave their own scope")
        }
        guard try await store.removeMember(member, from: scope) else {
            throw FerryServerError(.notFound, "`\(member)` is not a member of `\(scope)`")
        }
        store.changeFeed.publish([scope])
        return Response(status: .noContent)
    }
}
