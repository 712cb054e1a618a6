import Hummingbird
import NIOCore

/// `GET /healthz` and `GET /livez` (the process answers), `GET /readyz`
/// (it should get traffic), `GET /metrics` and `GET /openapi.json`: no
/// token needed.
extension SyncAPI {
    /// How long `/readyz` waits for the store before it calls it down.
    static let readinessTimeout = Duration.seconds(2)

    func health(_ request: Request, context: FerryRequestContext) async throws -> Response {
        JSONResponse.make(["status": "ok"])
    }

    /// 200 when the store answers (its migrations ran: it opened) and the
    /// server is not draining; 503 with the reason otherwise: while the store
    /// starts, during a store outage, and from the moment shutdown begins.
    func ready(_ request: Request, context: FerryRequestContext) async throws -> Response {
        func unavailable(_ reason: String) -> Response {
            var response = JSONResponse.make(["status": "unavailable", "reason": reason], status: .serviceUnavailable)
            response.headers[.retryAfter] = "1"
            response.headers[.cacheControl] = "no-store"
            return response
        }
        if readiness.isDraining { return unavailable("draining: the server is shutting down") }
        let store = self.store
        let answered = await readiness.storeAnswers(within: Self.readinessTimeout) {
            (try? await store.endCursors(scopes: [])) != nil
        }
        guard answered else { return unavailable("the store does not answer") }
        if readiness.isDraining { return unavailable("draining: the server is shutting down") }
        var response = JSONResponse.make(["status": "ready"])
        response.headers[.cacheControl] = "no-store"
        return response
    }

    func metricsText(_ request: Request, context: FerryRequestContext) async throws -> Response {
        // Read at scrape time, so no stream ending in a race leaves it stale.
        metrics.recordLiveSubscribers(store.changeFeed.subscriberCount)
        metrics.recordBlobBytesRehashed(blobs.bytesRehashed)
        return Response(
            status: .ok,
            headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: metrics.render()))
        )
    }

    static func openAPI(_ document: OpenAPIDocument) -> @Sendable (Request, FerryRequestContext) async throws -> Response {
        { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/json; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: document.data))
            )
        }
    }
}
