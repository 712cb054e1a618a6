import AsyncHTTPClient

/// Runs `body` with an HTTP client of its own, shut down once `body`
/// returns or throws: a scenario's requests never share a pool with
/// another's, nor leave one running.
///
/// ```swift
/// let page = try await withHTTPClient { client in try await client.execute(request, timeout: .seconds(30)) }
/// ```
func withHTTPClient<T>(
    _ configuration: HTTPClient.Configuration = HTTPClient.Configuration(), _ body: (HTTPClient) async throws -> T
) async throws -> T {
    let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    let value: T
    do {
        value = try await body(client)
    } catch {
        try? await client.shutdown()
        throw error
    }
    try await client.shutdown()
    return value
}
