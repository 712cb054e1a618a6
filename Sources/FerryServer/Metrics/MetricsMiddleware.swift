import Hummingbird

/// Counts and times every request by method, route pattern and status.
struct MetricsMiddleware: RouterMiddleware {
    typealias Context = FerryRequestContext

    let metrics: ServerMetrics

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        // The error middleware sits inside this one, so every outcome is a response.
        let response = try await next(request, context)
        metrics.recordRequest(
            method: request.method.rawValue,
            // The pattern, not the path, so label values stay few.
            route: context.endpointPath ?? "unmatched",
            status: response.status.code == ClientDisconnected.status ? "client_closed" : String(response.status.code),
            duration: ContinuousClock.now - start
        )
        return response
    }
}
