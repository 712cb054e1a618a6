import ServiceLifecycle

/// Fetches the identity provider's keys again at their cache lifetime, for
/// as long as the server runs.
struct IdentityProviderRefresh: Service {
    let keys: IdentityProviderKeys

    func run() async throws {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: keys.cacheLifetime) }
            } catch {
                return
            }
            await keys.load()
        }
    }
}
