import FerryProtocol
import Hummingbird

/// Webhooks: where each stands, and replaying one.
extension AdminAPI {
    func listWebhooks(_ request: Request, context: FerryRequestContext) async throws -> Response {
        JSONResponse.make(WebhookList(webhooks: try await webhooks.status()))
    }

    func replayWebhook(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let name = try SyncAPI.pathParameter("name", context)
        let body = try await request.decodeJSON(WebhookReplayRequest.self, schema: "WebhookReplayRequest", schemas: schemas, limits: limits)
        let start: WebhookReplay
        switch body.from ?? .stopped {
        case .stopped: start = .whereItStopped
        case .beginning: start = .beginning
        case .cursor:
            // The schema requires it; the store must be able to read it.
            let cursor = body.cursor ?? ""
            _ = try await store.changes(after: cursor, scope: nil, table: nil, limit: 1)
            start = .cursor(cursor)
        }
        guard try await webhooks.replay(name, from: start),
            let status = try await webhooks.status().first(where: { $0.name == name })
        else {
            throw FerryServerError(.notFound, "no webhook is named \(MutationCheck.quoted(name))")
        }
        return JSONResponse.make(status)
    }
}
