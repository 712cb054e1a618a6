import ArgumentParser
import FerryProtocol
import FerryPostgres
import FerryServer
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the sync API (the default).")

    @OptionGroup var options: ServerOptions

    @Option(help: ServerSettings.help("host"))
    var host: String?

    @Option(help: ServerSettings.help("port"))
    var port: Int?

    @Option(name: .customLong("tls-cert"), help: ServerSettings.help("tls.certificate"))
    var tlsCertificate: String?

    @Option(name: .customLong("tls-key"), help: ServerSettings.help("tls.key"))
    var tlsKey: String?

    @Option(help: ServerSettings.help("log.format"))
    var logFormat: String?

    @Option(help: ServerSettings.help("log.level"))
    var logLevel: String?

    @Option(help: ServerSettings.help("otel.endpoint"))
    var otelEndpoint: String?

    @Option(help: ServerSettings.help("policies"))
    var policy: [String] = []

    @Option(help: ServerSettings.help("tombstoneRetentionDays"))
    var tombstoneRetentionDays: Int?

    @Option(help: ServerSettings.help("garbageCollectionInterval"))
    var gcInterval: Double?

    @Option(help: ServerSettings.help("maxClockDrift"))
    var maxClockDrift: Double?

    @Option(help: ServerSettings.help("liveHeartbeat"))
    var liveHeartbeat: Double?

    @Option(help: ServerSettings.help("connections.headerTimeout"))
    var headerTimeout: Double?

    @Option(help: ServerSettings.help("connections.bodyTimeout"))
    var bodyTimeout: Double?

    @Option(help: ServerSettings.help("connections.idleTimeout"))
    var idleTimeout: Double?

    @Option(help: ServerSettings.help("connections.maxConnections"))
    var maxConnections: Int?

    @Option(help: ServerSettings.help("connections.maxLiveStreams"))
    var maxLiveStreams: Int?

    @Option(help: ServerSettings.help("limits.maxBodyBytes"))
    var maxBodyBytes: Int?

    @Option(help: ServerSettings.help("limits.maxBlobBytes"))
    var maxBlobBytes: Int?

    @Option(help: ServerSettings.help("limits.maxMutationsPerPush"))
    var maxMutationsPerPush: Int?

    @Option(help: ServerSettings.help("limits.maxColumnsPerMutation"))
    var maxColumnsPerMutation: Int?

    @Option(help: ServerSettings.help("limits.maxScopesPerRequest"))
    var maxScopesPerRequest: Int?

    @Option(help: ServerSettings.help("limits.defaultPullLimit"))
    var defaultPullLimit: Int?

    @Option(help: ServerSettings.help("limits.maxPullLimit"))
    var maxPullLimit: Int?

    @Option(help: ServerSettings.help("rateLimits.pushes"))
    var pushRate: String?

    @Option(help: ServerSettings.help("rateLimits.requests"))
    var requestRate: String?

    @Option(help: ServerSettings.help("rateLimits.blobBytes"))
    var blobByteRate: String?

    @Option(help: ServerSettings.help("shutdownGrace"))
    var shutdownGrace: Double?

    @Option(help: ServerSettings.help("drainSeconds"))
    var drainSeconds: Double?

    @Option(help: ServerSettings.help("identityProvider.jwksUrls"))
    var jwksUrl: [String] = []

    @Option(help: ServerSettings.help("identityProvider.jwksFiles"))
    var jwksFile: [String] = []

    @Option(help: ServerSettings.help("identityProvider.issuer"))
    var issuer: String?

    @Option(help: ServerSettings.help("identityProvider.audience"))
    var audience: String?

    @Option(help: ServerSettings.help("identityProvider.userClaim"))
    var userClaim: String?

    @Option(help: ServerSettings.help("identityProvider.scopesClaim"))
    var scopesClaim: String?

    @Option(help: ServerSettings.help("identityProvider.tokenLeeway"))
    var tokenLeeway: Double?

    @OptionGroup var storeOptions: StoreOptions

    @OptionGroup var adminOptions: AdminOptions

    /// The flags given, by setting key.
    var flags: [String: ResolvedSettings.Content] {
        let text: (String?) -> ResolvedSettings.Content? = { $0.map { .text($0) } }
        let integer: (Int?) -> ResolvedSettings.Content? = { $0.map { .integer($0) } }
        let seconds: (Double?) -> ResolvedSettings.Content? = { $0.map { .seconds($0) } }
        let own = ServerOptions.given([
            ("host", text(host)), ("port", integer(port)), ("tls.certificate", text(tlsCertificate)), ("tls.key", text(tlsKey)),
            ("log.format", text(logFormat)), ("log.level", text(logLevel)), ("otel.endpoint", text(otelEndpoint)),
            ("policies", ServerOptions.list(policy)), ("tombstoneRetentionDays", integer(tombstoneRetentionDays)),
            ("garbageCollectionInterval", seconds(gcInterval)), ("maxClockDrift", seconds(maxClockDrift)),
            ("liveHeartbeat", seconds(liveHeartbeat)), ("connections.headerTimeout", seconds(headerTimeout)),
            ("connections.bodyTimeout", seconds(bodyTimeout)), ("connections.idleTimeout", seconds(idleTimeout)),
            ("connections.maxConnections", integer(maxConnections)), ("connections.maxLiveStreams", integer(maxLiveStreams)),
            ("limits.maxBodyBytes", integer(maxBodyBytes)), ("limits.maxBlobBytes", integer(maxBlobBytes)),
            ("limits.maxMutationsPerPush", integer(maxMutationsPerPush)), ("limits.maxColumnsPerMutation", integer(maxColumnsPerMutation)),
            ("limits.maxScopesPerRequest", integer(maxScopesPerRequest)), ("limits.defaultPullLimit", integer(defaultPullLimit)),
            ("limits.maxPullLimit", integer(maxPullLimit)), ("rateLimits.pushes", text(pushRate)),
            ("rateLimits.requests", text(requestRate)), ("rateLimits.blobBytes", text(blobByteRate)),
            ("shutdownGrace", seconds(shutdownGrace)), ("drainSeconds", seconds(drainSeconds)),
            ("identityProvider.jwksUrls", ServerOptions.list(jwksUrl)), ("identityProvider.jwksFiles", ServerOptions.list(jwksFile)),
            ("identityProvider.issuer", text(issuer)), ("identityProvider.audience", text(audience)),
            ("identityProvider.userClaim", text(userClaim)), ("identityProvider.scopesClaim", text(scopesClaim)),
            ("identityProvider.tokenLeeway", seconds(tokenLeeway)),
        ])
        return own.merging(storeOptions.flags) { $1 }.merging(adminOptions.flags) { $1 }
    }

    func run() async throws {
        let settings = try await options.settings(flags)
        // Every setting checked before anything is started or written, the TLS files read.
        let tls = try settings.serverConfiguration(secret: "").tls.map { files throws(FerryServerError) in try ServerTLS(files: files) }
        let postgres = try settings.postgresConfiguration()
        let drain = try settings.drain()
        let traceEndpoint = try settings.traceEndpoint()
        ServerLogging.bootstrap(
            format: try settings.logFormat(), level: try settings.logLevel(), metadataProvider: traceEndpoint == nil ? nil : TraceExport.logMetadata)
        // Spans exported from the first request on; the exporter stops after the app and sends what is left.
        let traceExport = try traceEndpoint.map(TraceExport.bootstrap(endpoint:))
        // The embedded store's directory is this process's alone, for as long as it runs: taken before
        // anything in it is read or written (the secret a first start generates included).
        let lock: DataDirectoryLock? = postgres == nil ? try DataDirectoryLock.acquire(settings.dataDirectory) : nil
        let secret = try settings.secret()
        let configuration = try settings.serverConfiguration(secret: secret.value)
        let store: any SyncStore
        let storeDescription: String
        if let postgres {
            store = PostgresSyncStore(configuration: postgres)
            storeDescription = "PostgreSQL at \(postgres.redactedURL), pool of \(postgres.poolSize)"
        } else {
            let sqlite = try SQLiteSyncStore(directory: settings.dataDirectory)
            store = sqlite
            storeDescription = "SQLite in \(settings.dataDir) (epoch \(sqlite.epoch))"
        }
        let dataDir = settings.dataDir
        let readiness = ServerReadiness()
        let scheme = tls == nil ? "http" : "https"
        let app = try await FerryApplication.build(
            configuration: configuration,
            store: store,
            readiness: readiness,
            tls: tls,
            onServerRunning: { host, port in
                // Written unbuffered, so it shows at once even when piped.
                FileHandle.standardOutput.write(
                    Data(
                        """
                        Ferry server listening on \(scheme)://\(host):\(port)
                        Store: \(storeDescription)
                        JWT secret: \(secret.origin)
                        Get a token: swift run ferry-server token --user alice --data-dir \(dataDir)

                        """.utf8))
            },
            onAdminServerRunning: { host, port in
                FileHandle.standardOutput.write(Data("Admin API listening on http://\(host):\(port)/admin/v1\n".utf8))
            }
        )
        let logger = Logger(label: "ferry-server")
        for (given, meant) in ResolvedSettings.mistypedVariables(in: ProcessInfo.processInfo.environment) {
            logger.warning("\(given) is not a setting and is ignored; did you mean \(meant)?")
        }
        // SIGTERM and SIGINT are handled below: the server drains first, then shuts down.
        var group = ServiceGroupConfiguration(services: (traceExport.map { [$0] } ?? []) + [app], gracefulShutdownSignals: [], logger: logger)
        // Seven tenths into the grace period, what still runs is cancelled...
        group.maximumGracefulShutdownDuration = configuration.shutdownGracePeriod * 0.7
        // ...and at its end, a store that ignores cancellation (its database gone) does not hold the process.
        let watchdog = ShutdownWatchdog(after: drain + configuration.shutdownGracePeriod, logger: logger)
        let services = ServiceGroup(configuration: group)
        // Trapped before any service starts: a SIGTERM right after "listening" drains and stops, never kills.
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        // SIGHUP is taken only to reload a certificate; without TLS it stops the process, as before.
        let hangups = tls == nil ? nil : await UnixSignalsSequence(trapping: .sighup)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            if let tls, let hangups {
                // A renewed certificate: new connections get it; open ones (live streams) keep theirs.
                tasks.addTask {
                    for await _ in hangups {
                        do {
                            try tls.reload()
                            logger.info("TLS certificate reloaded", metadata: ["certificate": "\(tls.files.certificateChain)"])
                        } catch {
                            logger.error("TLS certificate not reloaded; the one in use stays", metadata: ["error": "\(error)"])
                        }
                    }
                }
            }
            tasks.addTask {
                for await _ in signals {
                    // From the first signal the whole stop is bounded, drain included.
                    Task.detached { await watchdog.expire() }
                    // `/readyz` answers 503 while requests are still served; then the graceful shutdown.
                    readiness.drain()
                    if drain > .zero { try? await Task.sleep(for: drain) }
                    await services.triggerGracefulShutdown()
                    return
                }
            }
            try await services.run()
            tasks.cancelAll()
        }
        FileHandle.standardOutput.write(Data("Ferry server stopped; store closed.\n".utf8))
        _ = consume lock
    }
}
