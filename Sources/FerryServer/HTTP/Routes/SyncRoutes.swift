import FerryProtocol
import Hummingbird
import Tracing

/// `POST /v1/push` and `POST /v1/pull`.
extension SyncAPI {
    func push(_ request: Request, context: FerryRequestContext) async throws -> Response {
        try await withSpan("ferry.push") { span in try await push(request, context: context, span: span) }
    }

    private func push(_ request: Request, context: FerryRequestContext, span: any Span) async throws -> Response {
        let userID = try context.requireUser()
        let push = try await request.decodeJSON(PushRequest.self, schema: "PushRequest", schemas: schemas, limits: limits)
        try MutationCheck(tables: configuration.tables).check(push)
        try await requireWrite(for: push, userID: userID, grants: context.tokenGrants)
        span.attributes["ferry.mutations"] = push.mutations.count
        span.attributes["ferry.client"] = push.clientID
        var rules = PushRules(tables: configuration.tables, maxClockDrift: configuration.maxClockDrift, now: configuration.now())
        let receipt = try await withSpan("ferry.store.push") { _ in
            rules.serviceContext = ServiceContext.current
            return try await store.push(push, userID: userID, rules: rules)
        }
        metrics.recordPush(receipt.response)
        return JSONResponse.make(json: try StoreCoding.pushResponseJSON(receipt.response))
    }

    /// Requires write access in every scope with a mutation the store has
    /// not applied. Mutations it already applied are only acknowledged
    /// again, even if the user has since lost write access: a resend after
    /// a lost reply must not turn an applied edit into a refused one.
    ///
    /// Which mutations were applied is read only when a scope is refused:
    /// the usual push, writable everywhere, needs no read of the store
    /// before its own transaction.
    private func requireWrite(for push: PushRequest, userID: String, grants: [String: ScopeRole]) async throws {
        var refused: [(scope: String, error: FerryServerError)] = []
        for scope in Set(push.mutations.map(\.scope)).sorted() {
            do {
                try await require(.write, in: scope, for: userID, grants: grants)
            } catch let error as FerryServerError where error.code == .forbidden {
                refused.append((scope, error))
            }
        }
        guard !refused.isEmpty else { return }
        let applied = try await store.lastAppliedMutationID(userID: userID, clientID: push.clientID)
        let unapplied = Set(push.mutations.filter { $0.mutationID > applied }.map(\.scope))
        if let first = refused.first(where: { unapplied.contains($0.scope) }) {
            throw first.error
        }
    }

    func pull(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let userID = try context.requireUser()
        let pull = try await request.decodeJSON(PullRequest.self, schema: "PullRequest", schemas: schemas, limits: limits)
        try checkFollowed(pull.scopes.map(\.scope))
        let limit = pull.limit ?? limits.defaultPullLimit
        for followed in pull.scopes {
            try await require(.read, in: followed.scope, for: userID, grants: context.tokenGrants)
        }
        let answer = try await withSpan("ferry.store.pull") { span in
            let answer = try await store.pullEncoded(pull, userID: userID, limit: limit)
            span.attributes["ferry.rows"] = answer.rowCount
            return answer
        }
        metrics.recordPull(rows: answer.rowCount, readAhead: answer.wasReadAhead)
        metrics.recordDevicePull(
            userID: userID, clientID: pull.clientID,
            pages: answer.pages.map { DevicePulls.Page(scope: $0.scope, rows: $0.rows.count, hasMore: $0.hasMore) })
        return JSONResponse.make(body: try answer.body())
    }
}
