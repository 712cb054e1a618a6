import FerryProtocol
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import ServiceLifecycle

/// Builds the Ferry sync server: a Hummingbird 2 application over a ``SyncStore``.
///
/// ```swift
/// let store = try SQLiteSyncStore(directory: URL(filePath: "./ferry-data"))
/// let app = try await FerryApplication.build(
///     configuration: FerryServerConfiguration(jwtSecret: secret),
///     store: store
/// )
/// try await app.runService()   // until SIGTERM or SIGINT; then drains and closes the store
/// ```
///
/// ## Topics
/// - ``FerryServerConfiguration``
/// - ``SyncStore``
/// - ``TokenAuthority``
public enum FerryApplication {
    /// The application: routes, the store's lifecycle and garbage collection.
    ///
    /// - Parameters:
    ///   - configuration: where it listens, its secret, limits and table rules.
    ///   - store: where rows, versions and scopes are kept.
    ///   - blobs: where attachment bytes are kept; by default the store's
    ///     own (``SyncStore/makeBlobStore(maxBlobBytes:)``).
    ///   - metrics: where request and sync counters go.
    ///   - logger: the server's log.
    ///   - readiness: what `/readyz` answers besides the store: draining
    ///     once ``ServerReadiness/drain()`` is called.
    ///   - tls: the certificate to serve, to reload later (see ``ServerTLS``);
    ///     by default read from ``FerryServerConfiguration/tls``, if set.
    ///   - onServerRunning: called with the bound address once the
    ///     server listens (useful with port `0`).
    ///   - onAdminServerRunning: the same for the admin API's listener
    ///     (``FerryServerConfiguration/admin``).
    public static func build(
        configuration: FerryServerConfiguration,
        store: any SyncStore,
        blobs: (any BlobStore)? = nil,
        metrics: ServerMetrics = ServerMetrics(),
        logger: Logger = Logger(label: "ferry-server"),
        readiness: ServerReadiness = ServerReadiness(),
        tls: ServerTLS? = nil,
        onServerRunning: (@Sendable (String, Int) async -> Void)? = nil,
        onAdminServerRunning: (@Sendable (String, Int) async -> Void)? = nil
    ) async throws -> some ApplicationProtocol {
        let blobs = try blobs ?? store.makeBlobStore(maxBlobBytes: configuration.limits.maxBlobBytes)
        let tls = try tls ?? configuration.tls.map { files throws(FerryServerError) in try ServerTLS(files: files) }
        try configuration.identityProvider?.validate()
        let provider = configuration.identityProvider.map { IdentityProviderKeys(configuration: $0, metrics: metrics) }
        await provider?.load()
        let router = try await makeRouter(
            configuration: configuration, store: store, blobs: blobs, metrics: metrics,
            readiness: readiness, identityProvider: provider)
        let descriptors = DescriptorLimit.raise()
        var connections = configuration.connections
        connections.maxConnections = connections.effectiveMaxConnections(descriptorLimit: descriptors)
        logger.info(
            "limits",
            metadata: [
                "open_files": "\(descriptors)",
                "max_connections": "\(connections.maxConnections)",
                "max_live_streams_per_user": "\(connections.maxLiveStreamsPerUser)",
                "header_timeout": "\(connections.headerReadTimeout)",
                "body_timeout": "\(connections.bodyReadTimeout)",
                "idle_timeout": "\(connections.idleTimeout)",
                "max_body_bytes": "\(configuration.limits.maxBodyBytes)",
            ])
        let open = OpenConnections(limit: connections.maxConnections)
        let webhooks = WebhookDeliveries(store: store, webhooks: configuration.webhooks, metrics: metrics, logger: logger, now: configuration.now)
        var adminServices: [any Service] = []
        if let admin = configuration.admin {
            let adminRouter = try AdminAPI.makeRouter(
                admin: admin, configuration: configuration, store: store, blobs: blobs, metrics: metrics, webhooks: webhooks)
            adminServices.append(
                Application(
                    router: adminRouter,
                    server: FerryHTTPChannel.builder(limits: connections, open: open, metrics: metrics),
                    configuration: .init(address: .hostname(admin.host, port: admin.port), serverName: "ferry-admin"),
                    onServerRunning: { channel in
                        if let address = channel.localAddress {
                            await onAdminServerRunning?(address.ipAddress ?? admin.host, address.port ?? admin.port)
                        }
                    },
                    logger: logger
                ))
        }
        return Application(
            router: router,
            server: FerryHTTPChannel.builder(limits: connections, open: open, metrics: metrics, tls: tls),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port),
                serverName: "ferry",
                // A backstop under the 503s: stop accepting before the process runs out of descriptors.
                // Halfway into the descriptors kept for the store, so a flood of refusals never takes them all.
                availableConnectionsDelegate: MaximumAvailableConnections(
                    connections.maxConnections + max(1, (descriptors - connections.maxConnections) / 2), logger: logger
                )
            ),
            services: [
                StoreService(store: store, readiness: readiness),
                GarbageCollector(store: store, blobs: blobs, configuration: configuration, metrics: metrics, logger: logger),
                webhooks,
            ] + (provider.map { [IdentityProviderRefresh(keys: $0)] } ?? []) + adminServices,
            onServerRunning: { channel in
                if let address = channel.localAddress {
                    await onServerRunning?(address.ipAddress ?? configuration.host, address.port ?? configuration.port)
                }
            },
            logger: logger
        )
    }

    /// The router alone, for tests that drive requests without a socket.
    public static func makeRouter(
        configuration: FerryServerConfiguration,
        store: any SyncStore,
        blobs: (any BlobStore)? = nil,
        metrics: ServerMetrics = ServerMetrics(),
        readiness: ServerReadiness = ServerReadiness(),
        identityProvider: IdentityProviderKeys? = nil
    ) async throws -> Router<FerryRequestContext> {
        try TokenAuthority.validate(secret: configuration.jwtSecret)
        try configuration.identityProvider?.validate()
        var provider = identityProvider
        if provider == nil, let configured = configuration.identityProvider {
            provider = IdentityProviderKeys(configuration: configured, metrics: metrics)
            await provider?.load()
        }
        let authority = await TokenAuthority(secret: configuration.jwtSecret, identityProvider: provider)
        let document = try OpenAPIDocument.bundled(limits: configuration.limits)
        let api = SyncAPI(
            store: store, blobs: try blobs ?? store.makeBlobStore(maxBlobBytes: configuration.limits.maxBlobBytes),
            configuration: configuration, metrics: metrics, schemas: try RequestSchemas(document: document),
            readiness: readiness)

        typealias Handler = @Sendable (Request, FerryRequestContext) async throws -> Response
        let open: [(HTTPRequest.Method, String, Handler)] = [
            (.get, "/healthz", api.health),
            (.get, "/livez", api.health),
            (.get, "/readyz", api.ready),
            (.get, "/metrics", api.metricsText),
            (.get, "/openapi.json", SyncAPI.openAPI(document)),
        ]
        let authenticated: [(HTTPRequest.Method, String, Handler)] = [
            (.post, "push", api.push),
            (.post, "pull", api.pull),
            (.get, "live", api.live),
            (.get, "rows/:scope/:table/:rowID", api.row),
            (.get, "scopes", api.listScopes),
            (.post, "scopes", api.createScope),
            (.put, "scopes/:scope/members/:user", api.setMember),
            (.delete, "scopes/:scope/members/:user", api.removeMember),
            (.head, "blobs/:scope/:sha256", api.headBlob),
            (.put, "blobs/:scope/:sha256", api.putBlob),
            (.get, "blobs/:scope/:sha256", api.getBlob),
        ]
        let table = RouteTable(open.map { ($0.0, $0.1) } + authenticated.map { ($0.0, "/v1/" + $0.1) })

        let router = Router(context: FerryRequestContext.self)
        // A span a request (W3C `traceparent` and the like read by the tracer the app bootstraps; a no-op without one).
        router.add(middleware: TracingMiddleware())
        router.add(middleware: MetricsMiddleware(metrics: metrics))
        // At `--log-level debug`, a line a request, with the `hb.request.id` its other lines carry.
        router.add(middleware: LogRequestsMiddleware(.debug))
        router.add(middleware: ErrorMiddleware(routes: table))
        for (method, path, handler) in open {
            router.on(RouterPath(path), method: method, use: handler)
        }
        let v1 = router.group("v1").add(middleware: ResponseCompressionMiddleware()).add(middleware: AuthMiddleware(authority: authority))
            .add(
                middleware: RateLimitMiddleware(
                    limiter: UserRateLimiter(configuration.rateLimits), metrics: metrics, maxBlobBytes: configuration.limits.maxBlobBytes))
        for (method, path, handler) in authenticated {
            v1.on(RouterPath(path), method: method, use: handler)
        }
        return router
    }
}

/// Runs the store, and closes it after the server has drained its
/// requests. A graceful shutdown also marks the server as draining, for
/// `/readyz`.
struct StoreService: Service {
    let store: any SyncStore
    let readiness: ServerReadiness

    func run() async throws {
        try await withGracefulShutdownHandler {
            try await store.run()
        } onGracefulShutdown: {
            readiness.drain()
        }
    }
}

/// Removes old tombstones on a schedule (ARCHITECTURE.md server semantic 6),
/// then the blobs no attachment row refers to any more.
struct GarbageCollector: Service {
    let store: any SyncStore
    let blobs: any BlobStore
    let configuration: FerryServerConfiguration
    let metrics: ServerMetrics
    let logger: Logger

    func run() async throws {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: configuration.garbageCollectionInterval) }
            } catch {
                return
            }
            let cutoff = configuration.now().addingTimeInterval(-configuration.tombstoneRetention.timeInterval)
            do {
                let report = try await store.collectGarbage(before: cutoff)
                logger.info("garbage collected", metadata: ["tombstones": "\(report.tombstonesRemoved)", "horizon": "\(report.horizon)"])
                let removed = try await BlobGarbageRules.collect(store: store, blobs: blobs, before: cutoff)
                logger.info("blobs collected", metadata: ["blobs": "\(removed)"])
                metrics.recordGarbageRun(GarbageRun(at: configuration.now(), tombstones: report.tombstonesRemoved, blobs: removed, error: nil))
            } catch {
                logger.error("garbage collection failed", metadata: ["error": "\(error)"])
                metrics.recordGarbageRun(GarbageRun(at: configuration.now(), tombstones: 0, blobs: 0, error: "\(error)"))
            }
        }
    }
}
