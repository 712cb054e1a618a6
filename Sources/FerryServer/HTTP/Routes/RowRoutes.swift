import FerryProtocol
import Hummingbird

/// `GET /v1/rows/{scope}/{table}/{rowID}`: one row as the server holds it,
/// authorized like a pull of its scope. A client fetches it to settle a
/// conflict or drop a rejected edit on a row it does not hold.
extension SyncAPI {
    func row(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let userID = try context.requireUser()
        let scope = try Self.pathParameter("scope", context)
        let table = try Self.pathParameter("table", context)
        let rowID = try Self.pathParameter("rowID", context)
        guard ScopeName.isValid(scope) else {
            throw FerryServerError.badRequest("scope \(MutationCheck.quoted(scope)) is not a valid scope name")
        }
        // Access first: a non-member learns nothing, not even whether the row exists.
        try await require(.read, in: scope, for: userID, grants: context.tokenGrants)
        guard MutationCheck.isIdentifier(table) else {
            throw FerryServerError.badRequest("table name \(MutationCheck.quoted(table)) is not an identifier")
        }
        guard MutationCheck.isRowID(rowID) else {
            throw FerryServerError.badRequest("row id must be 1–128 printable ASCII characters")
        }
        guard let row = try await store.row(scope: scope, table: table, rowID: rowID) else {
            throw FerryServerError(.notFound, "scope `\(scope)` has no row \(MutationCheck.quoted(rowID)) in table `\(table)`")
        }
        return JSONResponse.make(row)
    }
}
