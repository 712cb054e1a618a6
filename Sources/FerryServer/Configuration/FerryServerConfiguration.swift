import Foundation

/// Everything a Ferry server needs besides its store.
///
/// ```swift
/// var configuration = FerryServerConfiguration(jwtSecret: secret)
/// configuration.port = 9090
/// configuration.tables.rules["invoice"] = TableRule(policy: .manual)
/// let app = try await FerryApplication.build(configuration: configuration, store: store)
/// try await app.runService()
/// ```
public struct FerryServerConfiguration: Sendable {
    /// The address to listen on; loopback by default.
    public var host = "127.0.0.1"
    /// The port to listen on; `0` picks a free one.
    public var port = 8080
    /// TLS on the API's port (HTTP/2 and HTTP/1.1, chosen by ALPN); `nil`
    /// serves plain HTTP/1.1, as behind a proxy that ends TLS.
    public var tls: TLSFiles?
    /// The HS256 secret that signs bearer tokens.
    public var jwtSecret: String
    /// Tokens from the app's identity provider (JWKS), accepted beside the
    /// server's own; `nil` for the server's own only.
    public var identityProvider: IdentityProviderConfiguration?
    /// The admin API's listener and credential; `nil` serves no admin API.
    public var admin: AdminConfiguration?
    /// Receivers of row changes, delivered from the change feed.
    public var webhooks: [WebhookConfiguration] = []
    /// What one request may carry.
    public var limits = ServerLimits()
    /// Timeouts and caps on connections and live streams.
    public var connections = ConnectionLimits()
    /// How fast one user may push, request and move attachment bytes.
    public var rateLimits = RateLimits()
    /// How long a stopping server (SIGTERM, SIGINT) waits for requests in
    /// flight and its store before it exits anyway. Default 10 s.
    public var shutdownGracePeriod: Duration = .seconds(10)
    public var tables = ServerTables()
    /// How far ahead of server time a last-write-wins stamp may be.
    public var maxClockDrift: Duration = .seconds(60)
    /// How long tombstones are kept before garbage collection removes them.
    public var tombstoneRetention: Duration = .seconds(30 * 24 * 3600)
    /// How often garbage collection runs.
    public var garbageCollectionInterval: Duration = .seconds(3600)
    /// How often an idle live stream sends a comment, so proxies keep it open
    /// and a vanished client is noticed.
    public var liveHeartbeat: Duration = .seconds(15)
    /// Server wall time; tests inject their own.
    public var now: @Sendable () -> Date = { Date() }

    public init(jwtSecret: String) {
        self.jwtSecret = jwtSecret
    }
}
