import Hummingbird
import NIOCore

/// `GET /healthz`, `GET /metrics` and `GET /openapi.json`: no token needed.
extension SyncAPI {
    func health(_ request: Request, context: FerryRequestContext) async throws -> Response {
        JSONResponse.make(["status": "ok"])
    }

    func metricsText(_ request: Request, context: FerryRequestContext) async throws -> Response {
        // Read at scrape time, so no stream ending in a race leaves it stale.
        metrics.recordLiveSubscribers(store.changeFeed.subscriberCount)
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
