import ArgumentParser
import FerryProtocol
import FerryServer
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the sync API (the default).")

    @OptionGroup var options: ServerOptions

    @Option(help: "The address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "The port to listen on (0 picks a free one).")
    var port: Int = 8080

    @Option(help: "A table's conflict policy, as table=policy (lastWriteWins, serverWins, clientWins, manual). Repeatable; other tables use lastWriteWins.")
    var policy: [String] = []

    @Option(help: "Days a tombstone is kept before garbage collection.")
    var tombstoneRetentionDays: Int = 30

    @Option(help: "Seconds a request may take to send its headers.")
    var headerTimeout: Double = 10

    @Option(help: "Seconds a request may take to send its body, after its headers.")
    var bodyTimeout: Double = 30

    @Option(help: "Seconds a kept-alive connection may wait for its next request.")
    var idleTimeout: Double = 60

    @Option(help: "Connections open at once (lowered to fit the open-file limit); more get 503.")
    var maxConnections: Int = 4096

    @Option(help: "Live streams one user may hold open at once; more get 429.")
    var maxLiveStreams: Int = 16

    @Option(help: "Pushes one user may send: PER_SECOND or PER_SECOND/BURST, or off; more get 429 with Retry-After.")
    var pushRate = RateLimits().pushes!.description

    @Option(help: "Other requests (pulls, reads, blob requests) one user may send: PER_SECOND[/BURST], or off.")
    var requestRate = RateLimits().requests!.description

    @Option(help: "Attachment bytes one user may move up and down: PER_SECOND[/BURST], or off.")
    var blobByteRate = RateLimits().blobBytes!.description

    @Option(help: "The largest attachment (blob) upload, in bytes; larger ones get 413 before any byte is read.")
    var maxBlobBytes: Int64 = 1 << 30

    @Option(help: "Seconds a stopping server waits for requests in flight and its store before it exits anyway.")
    var shutdownGrace: Double = 10

    @Option(help: "Seconds a stopping server keeps serving with /readyz answering 503, so a load balancer moves traffic away first.")
    var drainSeconds: Double = 0

    @Option(help: "Where the app's identity provider publishes its keys (a JWKS URL); its tokens are accepted beside the server's own. Repeatable.")
    var jwksUrl: [String] = []

    @Option(help: "A JWKS document on disk holding the identity provider's keys (for servers that cannot reach it). Repeatable.")
    var jwksFile: [String] = []

    @Option(help: "The `iss` an identity provider's token must carry.")
    var issuer: String?

    @Option(help: "A value an identity provider's token's `aud` must hold.")
    var audience: String?

    @Option(help: "The claim of an identity provider's token that holds the user id.")
    var userClaim: String = "sub"

    @Option(help: "A claim of an identity provider's token holding {\"<scope>\": \"read\"|\"write\"|\"owner\"}: roles in shared scopes granted for as long as the token lives.")
    var scopesClaim: String?

    @Option(help: "Seconds clocks may disagree when a token's exp, nbf and iat are checked.")
    var tokenLeeway: Double = 60

    @OptionGroup var storeOptions: StoreOptions

    @OptionGroup var adminOptions: AdminOptions

    /// The identity provider the JWKS flags describe, or `nil` with none.
    func identityProvider() throws -> IdentityProviderConfiguration? {
        guard !jwksUrl.isEmpty || !jwksFile.isEmpty else {
            guard issuer == nil, audience == nil, userClaim == "sub", scopesClaim == nil else {
                throw ValidationError("--issuer, --audience, --user-claim and --scopes-claim read identity provider tokens: name its keys with --jwks-url or --jwks-file")
            }
            return nil
        }
        var provider = IdentityProviderConfiguration()
        provider.jwksURLs = try jwksUrl.map { text in
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                throw ValidationError("--jwks-url \(text) is not an http or https URL")
            }
            return url
        }
        provider.jwksFiles = jwksFile
        provider.issuer = issuer
        provider.audience = audience
        provider.userClaim = userClaim
        provider.scopesClaim = scopesClaim
        provider.leeway = .seconds(tokenLeeway)
        do {
            try provider.validate()
        } catch {
            throw ValidationError(error.message)
        }
        return provider
    }

    func validate() throws {
        guard (0...600).contains(tokenLeeway) else { throw ValidationError("--token-leeway must be 0–600 seconds") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0–65535") }
        guard tombstoneRetentionDays >= 1 else { throw ValidationError("--tombstone-retention-days must be at least 1") }
        for (flag, seconds) in [
            ("--header-timeout", headerTimeout), ("--body-timeout", bodyTimeout),
            ("--idle-timeout", idleTimeout), ("--shutdown-grace", shutdownGrace),
        ]
        where !(seconds > 0 && seconds <= 86_400) {
            throw ValidationError("\(flag) must be more than 0 and at most 86400 seconds")
        }
        guard drainSeconds >= 0, drainSeconds <= 3600 else { throw ValidationError("--drain-seconds must be 0–3600") }
        guard maxConnections >= 1 else { throw ValidationError("--max-connections must be at least 1") }
        guard maxLiveStreams >= 1 else { throw ValidationError("--max-live-streams must be at least 1") }
        _ = try tables()
        _ = try rateLimits()
        _ = try adminOptions.admin()
        _ = try adminOptions.webhooks()
    }

    func tables() throws -> ServerTables {
        var tables = ServerTables()
        for entry in policy {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let policy = ConflictPolicy(rawValue: parts[1]) else {
                throw ValidationError("--policy \(entry): write table=policy, policy one of \(ConflictPolicy.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            tables.rules[parts[0]] = TableRule(policy: policy)
        }
        return tables
    }

    func rateLimits() throws -> RateLimits {
        func parse(_ flag: String, _ text: String) throws -> RateLimit? {
            do {
                return try RateLimit.parse(text)
            } catch {
                throw ValidationError("--\(flag): \(error.message)")
            }
        }
        var limits = RateLimits()
        limits.pushes = try parse("push-rate", pushRate)
        limits.requests = try parse("request-rate", requestRate)
        limits.blobBytes = try parse("blob-byte-rate", blobByteRate)
        return limits
    }

    func run() async throws {
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        // The embedded store's directory is this process's alone, for as long as it runs: taken before
        // anything in it is read or written (the secret a first start generates included).
        let postgres = try storeOptions.postgresConfiguration()
        var lock: DataDirectoryLock? = postgres == nil ? try DataDirectoryLock.acquire(options.dataDirectory) : nil
        let secret = try options.secret()
        var configuration = FerryServerConfiguration(jwtSecret: secret.value)
        configuration.host = host
        configuration.port = port
        configuration.tables = try tables()
        configuration.tombstoneRetention = .seconds(tombstoneRetentionDays * 24 * 3600)
        configuration.connections.headerReadTimeout = .seconds(headerTimeout)
        configuration.connections.bodyReadTimeout = .seconds(bodyTimeout)
        configuration.connections.idleTimeout = .seconds(idleTimeout)
        configuration.connections.maxConnections = maxConnections
        configuration.limits.maxBlobBytes = maxBlobBytes
        configuration.connections.maxLiveStreamsPerUser = maxLiveStreams
        configuration.rateLimits = try rateLimits()
        configuration.shutdownGracePeriod = .seconds(shutdownGrace)
        configuration.identityProvider = try identityProvider()
        configuration.admin = try adminOptions.admin()
        configuration.webhooks = try adminOptions.webhooks()
        let store: any SyncStore
        let storeDescription: String
        if let postgres {
            store = PostgresSyncStore(configuration: postgres)
            storeDescription = "PostgreSQL at \(postgres.redactedURL), pool of \(postgres.poolSize)"
        } else {
            let sqlite = try SQLiteSyncStore(directory: options.dataDirectory)
            store = sqlite
            storeDescription = "SQLite in \(options.dataDir) (epoch \(sqlite.epoch))"
        }
        let dataDir = options.dataDir
        let readiness = ServerReadiness()
        let app = try await FerryApplication.build(
            configuration: configuration,
            store: store,
            readiness: readiness,
            onServerRunning: { host, port in
                // Written unbuffered, so it shows at once even when piped.
                FileHandle.standardOutput.write(
                    Data(
                        """
                        Ferry server listening on http://\(host):\(port)
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
        // SIGTERM and SIGINT are handled below: the server drains first, then shuts down.
        var group = ServiceGroupConfiguration(services: [app], gracefulShutdownSignals: [], logger: logger)
        // Seven tenths into the grace period, what still runs is cancelled...
        group.maximumGracefulShutdownDuration = configuration.shutdownGracePeriod * 0.7
        let drain = Duration.milliseconds(Int64(drainSeconds * 1000))
        // ...and at its end, a store that ignores cancellation (its database gone) does not hold the process.
        let watchdog = ShutdownWatchdog(after: drain + configuration.shutdownGracePeriod, logger: logger)
        let services = ServiceGroup(configuration: group)
        // Trapped before any service starts: a SIGTERM right after "listening" drains and stops, never kills.
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
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
