import FerryProtocol
import Hummingbird

/// The users and devices the server has seen push.
extension AdminAPI {
    func users(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let query = try AdminQuery(request, allowed: ["after", "limit"])
        let limit = try query.limit()
        let after = try query.value("after", Self.isUserOrWriter, "a user id")
        let users = try await store.users(after: after, limit: limit)
        return JSONResponse.make(UserPage(users: users, next: users.count == limit ? users.last : nil))
    }

    func devices(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let user = try SyncAPI.pathParameter("user", context)
        guard Self.isUserOrWriter(user) else {
            throw FerryServerError.badRequest("user id \(MutationCheck.quoted(user)) is not a valid user id")
        }
        return JSONResponse.make(DeviceList(userID: user, devices: try await store.devices(of: user)))
    }

    /// A user id, or a server writer's (`server:<writer>`, with a colon no token's user id has).
    static func isUserOrWriter(_ id: String) -> Bool {
        ScopeName.isValidUserID(id)
            || (id.hasPrefix(BackendWriter.userPrefix) && ScopeName.isValidUserID(String(id.dropFirst(BackendWriter.userPrefix.count))))
    }
}
