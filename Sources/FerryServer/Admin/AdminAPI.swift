import FerryProtocol
import Foundation
import Hummingbird

/// The admin API (`/admin/v1/…` on its own port): what the app's backend
/// reads and changes — users and devices, scopes and members, rows, backend
/// writes, the change feed, webhooks. Authenticated by the admin
/// credential, never by a user token, and validated against the same
/// OpenAPI document as the public API (its `admin` tag).
struct AdminAPI: Sendable {
    let store: any SyncStore
    let configuration: FerryServerConfiguration
    let metrics: ServerMetrics
    let schemas: RequestSchemas
    let webhooks: WebhookDeliveries

    var limits: ServerLimits { configuration.limits }

    /// The most items one listing returns, and the default.
    static let maxPage = 1000
    static let defaultPage = 100

    /// The router of the admin port.
    static func makeRouter(
        admin: AdminConfiguration, configuration: FerryServerConfiguration, store: any SyncStore, blobs: any BlobStore, metrics: ServerMetrics,
        webhooks: WebhookDeliveries
    ) throws -> Router<FerryRequestContext> {
        let document = try OpenAPIDocument.bundled(limits: configuration.limits)
        let api = AdminAPI(
            store: store, configuration: configuration, metrics: metrics, schemas: try RequestSchemas(document: document), webhooks: webhooks)
        typealias Handler = @Sendable (Request, FerryRequestContext) async throws -> Response
        let routes: [(HTTPRequest.Method, String, Handler)] = [
            (.get, "users", api.users),
            (.get, "users/:user/devices", api.devices),
            (.get, "scopes", api.scopes),
            (.post, "scopes", api.createScope),
            (.get, "scopes/:scope", api.scope),
            (.put, "scopes/:scope/members/:user", api.setMember),
            (.delete, "scopes/:scope/members/:user", api.removeMember),
            (.get, "rows/:scope/:table", api.rows),
            (.get, "rows/:scope/:table/:rowID", api.row),
            (.post, "writes", api.write),
            (.get, "changes", api.changes),
            (.get, "webhooks", api.listWebhooks),
            (.post, "webhooks/:name/replay", api.replayWebhook),
        ]
        let now = configuration.now
        let console = Console(
            store: store, blobs: blobs, metrics: metrics, token: admin.token,
            sessions: ConsoleSessions(idleTimeout: admin.consoleSessionTimeout, now: { Int64(now().timeIntervalSince1970 * 1000) }),
            now: { Int64(now().timeIntervalSince1970 * 1000) }, heartbeat: .seconds(2))
        let table = RouteTable(
            [(.get, "/openapi.json")] + routes.map { ($0.0, "/admin/v1/" + $0.1) } + console.routes.map { ($0.0, $0.1) })
        let router = Router(context: FerryRequestContext.self)
        router.add(middleware: MetricsMiddleware(metrics: metrics))
        router.add(middleware: ErrorMiddleware(routes: table))
        router.on("/openapi.json", method: .get, use: SyncAPI.openAPI(document))
        for (method, path, handler) in console.routes {
            router.on(RouterPath(path), method: method, use: handler)
        }
        let v1 = router.group("admin/v1").add(middleware: AdminAuthMiddleware(token: admin.token))
        for (method, path, handler) in routes {
            v1.on(RouterPath(path), method: method, use: handler)
        }
        return router
    }

    /// A scope name from the path, checked.
    static func scopeParameter(_ context: FerryRequestContext) throws -> String {
        let scope = try SyncAPI.pathParameter("scope", context)
        guard ScopeName.isValid(scope) else { throw FerryServerError.badRequest("scope \(MutationCheck.quoted(scope)) is not a valid scope name") }
        return scope
    }
}

/// The query of an admin listing, read strictly: each parameter at most
/// once, and only those the route knows.
struct AdminQuery {
    private let parameters: [String: String]

    init(_ request: Request, allowed: Set<String>) throws(FerryServerError) {
        var parameters: [String: String] = [:]
        for (name, value) in request.uri.queryParameters {
            let name = String(name)
            guard allowed.contains(name) else {
                throw .badRequest("unknown query parameter \(MutationCheck.quoted(name)); this route takes \(allowed.sorted().joined(separator: ", "))")
            }
            guard parameters[name] == nil else { throw .badRequest("query parameter `\(name)` is given twice") }
            // Hummingbird has percent-decoded the value.
            parameters[name] = String(value)
        }
        self.parameters = parameters
    }

    subscript(name: String) -> String? { parameters[name] }

    /// `limit`: 1…``AdminAPI/maxPage``, by default ``AdminAPI/defaultPage``.
    func limit() throws(FerryServerError) -> Int {
        guard let text = parameters["limit"] else { return AdminAPI.defaultPage }
        guard let limit = Int(text), (1...AdminAPI.maxPage).contains(limit) else {
            throw .badRequest("limit must be a whole number from 1 to \(AdminAPI.maxPage)")
        }
        return limit
    }

    /// A parameter that must match `valid` when given.
    func value(_ name: String, _ valid: (String) -> Bool, _ what: String) throws(FerryServerError) -> String? {
        guard let value = parameters[name] else { return nil }
        guard valid(value) else { throw .badRequest("`\(name)` \(MutationCheck.quoted(value)) is not \(what)") }
        return value
    }
}
