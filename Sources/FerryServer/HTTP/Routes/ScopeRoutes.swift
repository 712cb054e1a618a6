import FerryProtocol
import Hummingbird

/// `GET /v1/scopes`, `POST /v1/scopes` and `PUT /v1/scopes/{scope}/members/{user}`.
extension SyncAPI {
    func listScopes(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let userID = try context.requireUser()
        let personal = ScopeMembership(scope: ScopeName.user(userID), role: .write, owner: true)
        let shared = try await store.memberships(of: userID)
        return JSONResponse.make(ScopeList(scopes: [personal] + shared))
    }

    func createScope(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let userID = try context.requireUser()
        let body = try await request.decodeJSON(CreateScopeRequest.self, limits: limits)
        guard ScopeName.isValid(body.scope) else {
            throw FerryServerError.badRequest("scope \(MutationCheck.quoted(body.scope)) is not a valid scope name")
        }
        guard ScopeName.owner(of: body.scope) == nil else {
            throw FerryServerError.badRequest("`\(ScopeName.userPrefix)…` scopes are personal and exist already; pick another name")
        }
        try await store.createScope(body.scope, owner: userID)
        return JSONResponse.make(ScopeMembership(scope: body.scope, role: .write, owner: true), status: .created)
    }

    func setMember(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let userID = try context.requireUser()
        let scope = try context.parameters.require("scope")
        let member = try context.parameters.require("user")
        let body = try await request.decodeJSON(MemberRequest.self, limits: limits)
        guard ScopeName.isValid(scope), ScopeName.owner(of: scope) == nil,
            try await store.membership(of: userID, in: scope)?.owner == true
        else {
            throw FerryServerError(.forbidden, "only the owner of a shared scope may add members to it")
        }
        guard ScopeName.isValidUserID(member) else {
            throw FerryServerError.badRequest("user id \(MutationCheck.quoted(member)) is not a valid user id")
        }
        try await store.setMember(member, role: body.role, in: scope)
        return JSONResponse.make(ScopeMembership(scope: scope, role: body.role, owner: false))
    }
}
