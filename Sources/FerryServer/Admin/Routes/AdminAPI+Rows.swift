import FerryProtocol
import Hummingbird

/// Rows: read one, list a table's, and write as the backend.
extension AdminAPI {
    func row(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let (scope, table) = try Self.scopeAndTable(context)
        let rowID = try SyncAPI.pathParameter("rowID", context)
        guard MutationCheck.isRowID(rowID) else { throw FerryServerError.badRequest("row id must be 1–128 printable ASCII characters") }
        guard let row = try await store.row(scope: scope, table: table, rowID: rowID) else {
            throw FerryServerError(.notFound, "scope `\(scope)` has no row \(MutationCheck.quoted(rowID)) in table `\(table)`")
        }
        return JSONResponse.make(row)
    }

    func rows(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let (scope, table) = try Self.scopeAndTable(context)
        let query = try AdminQuery(request, allowed: ["after", "limit", "changedSince"])
        let limit = try query.limit()
        let after = try query.value("after", MutationCheck.isRowID, "a row id")
        let since = try query.value("changedSince", { Int64($0).map { $0 >= 0 } ?? false }, "a time in milliseconds since 1970").flatMap { Int64($0) }
        let rows = try await store.rows(scope: scope, table: table, after: after, changedSince: since, limit: limit)
        return JSONResponse.make(RowPage(rows: rows, next: rows.count == limit ? rows.last?.rowID : nil))
    }

    /// A backend write: the same merge, conflict policy and notices as a
    /// push, attributed to `server:<writer>`, idempotent by request id.
    func write(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(BackendWriteRequest.self, schema: "BackendWriteRequest", schemas: schemas, limits: limits)
        let writer = BackendWriter(body)
        // A shared scope must exist: rows in one nobody can be a member of would be lost to every device.
        for scope in Set(body.writes.map(\.scope)).sorted() where ScopeName.owner(of: scope) == nil {
            guard try await store.scope(scope) != nil else { throw Self.noScope(scope) }
        }
        var bases: [RowKey: Int64] = [:]
        let applied = try await store.lastAppliedMutationID(userID: writer.userID, clientID: writer.clientID)
        // A request id names one write: sent again, it must be the same size (its results are the first ones).
        guard applied == 0 || applied == Int64(body.writes.count) else {
            throw FerryServerError(
                .alreadyExists,
                "request id \(MutationCheck.quoted(body.requestID)) was used for a write of \(applied) rows; this one has \(body.writes.count): use a new request id")
        }
        // A request applied before is only acknowledged again: its bases do not matter.
        if applied == 0 {
            for key in Set(writer.rowsWithoutBase) {
                bases[key] = try await store.row(scope: key.scope, table: key.table, rowID: key.rowID)?.version
            }
        }
        let now = configuration.now()
        let push = writer.push(bases: bases, now: PushRules(now: now).nowMilliseconds)
        try MutationCheck(tables: configuration.tables).check(push)
        var rules = PushRules(tables: configuration.tables, maxClockDrift: configuration.maxClockDrift, now: now)
        // A resend is stamped and based anew: only its size is compared (the request id is its identity).
        rules.comparesReplays = false
        let receipt = try await store.push(push, userID: writer.userID, rules: rules)
        metrics.recordPush(receipt.response)
        return JSONResponse.make(BackendWriteResponse(results: receipt.response.results))
    }

    private static func scopeAndTable(_ context: FerryRequestContext) throws -> (String, String) {
        let scope = try scopeParameter(context)
        let table = try SyncAPI.pathParameter("table", context)
        guard MutationCheck.isIdentifier(table) else { throw FerryServerError.badRequest("table name \(MutationCheck.quoted(table)) is not an identifier") }
        return (scope, table)
    }
}
