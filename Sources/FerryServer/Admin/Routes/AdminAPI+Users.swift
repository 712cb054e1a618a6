import FerryProtocol
import Hummingbird

/// The users and devices the server has seen push.
extension AdminAPI {
    func users(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let query = try AdminQuery(request, allowed: ["after", "limit"])
        let limit = try query.limit()
        let after = try query.value("after", ScopeName.isValidUserID, "a user id")
        let users = try await store.users(after: after, limit: limit)
        return JSONResponse.make(UserPage(users: users, next: users.count == limit ? users.last : nil))
    }

    func devices(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let user = try SyncAPI.pathParameter("user", context)
        // A server writer's id (`server:<writer>`) has a colon no token's user id has.
        let writer = user.hasPrefix(BackendWriter.userPrefix) && ScopeName.isValidUserID(String(user.dropFirst(BackendWriter.userPrefix.count)))
        guard ScopeName.isValidUserID(user) || writer else {
            throw FerryServerError.badRequest("user id \(MutationCheck.quoted(user)) is not a valid user id")
        }
        return JSONResponse.make(DeviceList(userID: user, devices: try await store.devices(of: user)))
    }
}
