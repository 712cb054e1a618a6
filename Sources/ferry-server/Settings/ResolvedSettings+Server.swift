import FerryProtocol
import FerryPostgres
import FerryServer
import Foundation
import Logging

/// What the settings mean to the server: the library's configuration
/// types, each value checked and every error naming where it came from.
///
/// ```swift
/// let settings = try await ResolvedSettings.resolve(flags: [:], configFile: "ferry.yaml")
/// var configuration = try settings.serverConfiguration(secret: try settings.secret())
/// ```
extension ResolvedSettings {
    /// The data directory as given.
    var dataDir: String { text("dataDir") ?? "./ferry-data" }

    var dataDirectory: URL { URL(filePath: dataDir) }

    /// The JWT secret given, or the one the data directory holds (generated
    /// there at a first start with `create`).
    func secret(create: Bool = true) throws(SettingsError) -> JWTSecret {
        do {
            var secret = try JWTSecret.resolve(flag: text("jwtSecret"), environment: [:], dataDirectory: dataDirectory, create: create)
            if isGiven("jwtSecret") { secret.origin = name("jwtSecret") }
            return secret
        } catch let error as FerryServerError {
            throw SettingsError(isGiven("jwtSecret") ? "\(name("jwtSecret")): \(error.message)" : error.message)
        } catch {
            throw SettingsError("the JWT secret: \(error)")
        }
    }

    /// The PostgreSQL store's configuration, if one was asked for.
    func postgresConfiguration() throws(SettingsError) -> PostgresStoreConfiguration? {
        // Checked whether or not PostgreSQL is used: a bad value is never silently ignored.
        let poolSize = integer("postgres.poolSize") ?? 20
        guard (1...1000).contains(poolSize) else { throw SettingsError("\(name("postgres.poolSize")) must be 1–1000") }
        let timeout = seconds("postgres.statementTimeout") ?? 30
        guard timeout.isFinite, (0.001...86_400).contains(timeout) else {
            throw SettingsError("\(name("postgres.statementTimeout")) must be 0.001–86400 seconds")
        }
        let connectionTimeout = try duration("postgres.connectionTimeout", in: 0...3600)
        let lockTimeout = try duration("postgres.lockTimeout", in: 0...86_400)
        let maxPageBytes = try count("postgres.maxPageBytes", in: 65_536...(1 << 30))
        guard let url = text("postgres.url") else { return nil }
        do {
            var configuration = try PostgresStoreConfiguration(url: url)
            configuration.poolSize = poolSize
            configuration.statementTimeout = .milliseconds(Int64(timeout * 1000))
            configuration.connectionTimeout = connectionTimeout
            configuration.lockTimeout = min(lockTimeout, configuration.statementTimeout)
            configuration.maxPageBytes = maxPageBytes
            return configuration
        } catch let error as FerryServerError {
            throw SettingsError("\(name("postgres.url")): \(error.message)")
        } catch {
            throw SettingsError("\(name("postgres.url")): \(error)")
        }
    }

    /// Runs `body` on the chosen store, started and closed around it, for
    /// commands that are not the server.
    func withStore<T>(_ body: (any SyncStore) async throws -> T) async throws -> T {
        guard let configuration = try postgresConfiguration() else {
            // Beside a running server: no new store generation (its cursors stay held).
            let store = try SQLiteSyncStore(directory: dataDirectory, serving: false)
            let value = try await body(store)
            try await store.close()
            return value
        }
        let store = PostgresSyncStore(configuration: configuration)
        let running = Task { try await store.run() }
        do {
            try await store.waitUntilReady()
            let value = try await body(store)
            try await store.close()
            try await running.value
            return value
        } catch {
            try? await store.close()
            _ = try? await running.value
            throw error
        }
    }

    /// Seconds in `range`, as a `Duration`.
    private func duration(_ key: String, in range: ClosedRange<Double>, excludingLower: Bool = true) throws(SettingsError) -> Duration {
        let value = seconds(key) ?? 0
        // Checked as used: in whole milliseconds.
        let milliseconds = value.isFinite ? (value * 1000).rounded() : .nan
        guard range.contains(value), !(excludingLower && milliseconds <= range.lowerBound * 1000) else {
            let lower = "at least \(Self.format(range.lowerBound + (excludingLower ? 0.001 : 0)))"
            throw SettingsError("\(name(key)) must be \(lower) and at most \(Self.format(range.upperBound)) seconds")
        }
        return .milliseconds(Int64(milliseconds))
    }

    private func count(_ key: String, in range: ClosedRange<Int>) throws(SettingsError) -> Int {
        let value = integer(key) ?? 0
        guard range.contains(value) else { throw SettingsError("\(name(key)) must be \(range.lowerBound)–\(range.upperBound)") }
        return value
    }

    private static func format(_ value: Double) -> String {
        value.rounded() == value ? String(Int64(value)) : String(value)
    }

    /// How long a stopping server keeps serving with `/readyz` at 503.
    func drain() throws(SettingsError) -> Duration {
        try duration("drainSeconds", in: 0...3600, excludingLower: false)
    }

    /// The server's configuration, with `secret` signing its tokens.
    func serverConfiguration(secret: String) throws(SettingsError) -> FerryServerConfiguration {
        var configuration = FerryServerConfiguration(jwtSecret: secret)
        configuration.host = text("host") ?? configuration.host
        configuration.port = try count("port", in: 0...65535)
        switch (text("tls.certificate"), text("tls.key")) {
        case (nil, nil): break
        case (let certificate?, let key?): configuration.tls = TLSFiles(certificateChain: certificate, privateKey: key)
        case (nil, _): throw SettingsError("\(name("tls.key")) needs \(name("tls.certificate")) too")
        case (_, nil): throw SettingsError("\(name("tls.certificate")) needs \(name("tls.key")) too")
        }
        configuration.tables = try tables()
        configuration.tombstoneRetention = .seconds(try count("tombstoneRetentionDays", in: 1...36_500) * 24 * 3600)
        configuration.garbageCollectionInterval = try duration("garbageCollectionInterval", in: 0...30 * 86_400)
        configuration.maxClockDrift = try duration("maxClockDrift", in: 0...86_400, excludingLower: false)
        configuration.liveHeartbeat = try duration("liveHeartbeat", in: 0...3600)
        configuration.connections.headerReadTimeout = try duration("connections.headerTimeout", in: 0...86_400)
        configuration.connections.bodyReadTimeout = try duration("connections.bodyTimeout", in: 0...86_400)
        configuration.connections.idleTimeout = try duration("connections.idleTimeout", in: 0...86_400)
        configuration.connections.maxConnections = try count("connections.maxConnections", in: 1...1_000_000)
        configuration.connections.maxLiveStreamsPerUser = try count("connections.maxLiveStreams", in: 1...100_000)
        configuration.limits.maxBodyBytes = try count("limits.maxBodyBytes", in: 1024...(1 << 30))
        configuration.limits.maxBlobBytes = Int64(try count("limits.maxBlobBytes", in: 1...(1 << 50)))
        configuration.limits.maxMutationsPerPush = try count("limits.maxMutationsPerPush", in: 1...100_000)
        configuration.limits.maxColumnsPerMutation = try count("limits.maxColumnsPerMutation", in: 1...10_000)
        configuration.limits.maxScopesPerRequest = try count("limits.maxScopesPerRequest", in: 1...10_000)
        configuration.limits.maxPullLimit = try count("limits.maxPullLimit", in: 1...1_000_000)
        configuration.limits.defaultPullLimit = try count("limits.defaultPullLimit", in: 1...configuration.limits.maxPullLimit)
        configuration.rateLimits = try rateLimits()
        configuration.shutdownGracePeriod = try duration("shutdownGrace", in: 0...86_400)
        configuration.identityProvider = try identityProvider()
        configuration.admin = try admin()
        configuration.webhooks = try webhooks()
        return configuration
    }

    func tables() throws(SettingsError) -> ServerTables {
        var tables = ServerTables()
        for entry in list("policies") {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let policy = ConflictPolicy(rawValue: parts[1]) else {
                let policies = ConflictPolicy.allCases.map(\.rawValue).joined(separator: ", ")
                throw SettingsError("\(name("policies")) \(entry): write table=policy, policy one of \(policies)")
            }
            tables.rules[parts[0]] = TableRule(policy: policy)
        }
        return tables
    }

    func rateLimits() throws(SettingsError) -> RateLimits {
        func rate(_ key: String) throws(SettingsError) -> RateLimit? {
            do {
                return try RateLimit.parse(text(key) ?? "off")
            } catch {
                throw SettingsError("\(name(key)): \(error.message)")
            }
        }
        var limits = RateLimits()
        limits.pushes = try rate("rateLimits.pushes")
        limits.requests = try rate("rateLimits.requests")
        limits.blobBytes = try rate("rateLimits.blobBytes")
        return limits
    }

    /// The identity provider the settings describe, or `nil` with none.
    func identityProvider() throws(SettingsError) -> IdentityProviderConfiguration? {
        let urls = list("identityProvider.jwksUrls")
        let files = list("identityProvider.jwksFiles")
        let leeway = try duration("identityProvider.tokenLeeway", in: 0...600, excludingLower: false)
        guard !urls.isEmpty || !files.isEmpty else {
            // The user claim's default, given explicitly, asks for nothing.
            for key in ["identityProvider.issuer", "identityProvider.audience", "identityProvider.userClaim", "identityProvider.scopesClaim"]
            where isGiven(key) && !(key == "identityProvider.userClaim" && text(key) == "sub") {
                throw SettingsError("\(name(key)) reads identity provider tokens: name its keys with --jwks-url or --jwks-file")
            }
            return nil
        }
        var provider = IdentityProviderConfiguration()
        provider.jwksURLs = try urls.map { (text: String) throws(SettingsError) -> URL in
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                throw SettingsError("\(name("identityProvider.jwksUrls")) \(text) is not an http or https URL")
            }
            return url
        }
        provider.jwksFiles = files
        provider.issuer = text("identityProvider.issuer")
        provider.audience = text("identityProvider.audience")
        provider.userClaim = text("identityProvider.userClaim") ?? "sub"
        provider.scopesClaim = text("identityProvider.scopesClaim")
        provider.leeway = leeway
        do {
            try provider.validate()
        } catch {
            throw SettingsError(error.message)
        }
        return provider
    }

    func admin() throws(SettingsError) -> AdminConfiguration? {
        guard isGiven("admin.port") else {
            guard !isGiven("admin.token") else { throw SettingsError("\(name("admin.token")) needs --admin-port (admin.port)") }
            return nil
        }
        let port = try count("admin.port", in: 0...65535)
        guard let token = text("admin.token") else {
            throw SettingsError("\(name("admin.port")) needs the admin token (--admin-token-file, FERRY_ADMIN_TOKEN_FILE or admin.tokenFile): the admin API is never open")
        }
        let sessionTimeout = try duration("admin.consoleSessionTimeout", in: 0...86_400)
        do {
            var admin = try AdminConfiguration(port: port, token: token)
            admin.host = text("admin.host") ?? admin.host
            admin.consoleSessionTimeout = sessionTimeout
            return admin
        } catch let error as FerryServerError {
            throw SettingsError("\(name("admin.token")): \(error.message)")
        } catch {
            throw SettingsError("\(name("admin.token")): \(error)")
        }
    }

    func webhooks() throws(SettingsError) -> [WebhookConfiguration] {
        let endpoints = list("webhooks.endpoints")
        guard !endpoints.isEmpty else {
            for key in ["webhooks.secret", "webhooks.scopes", "webhooks.tables"] where isGiven(key) {
                throw SettingsError("\(name(key)) configures webhooks: name one with --webhook name=URL (webhooks.endpoints)")
            }
            return []
        }
        guard let secret = text("webhooks.secret") else {
            throw SettingsError("\(name("webhooks.endpoints")) needs the webhook secret (--webhook-secret-file, FERRY_WEBHOOKS_SECRET_FILE or webhooks.secretFile): every delivery is signed")
        }
        let scopes = try pairs("webhooks.scopes")
        let tables = try pairs("webhooks.tables")
        let batchSize = try count("webhooks.batchSize", in: 1...10_000)
        let maxFailures = try count("webhooks.maxFailures", in: 1...1000)
        let initialBackoff = try duration("webhooks.initialBackoff", in: 0...3600)
        let maxBackoff = try duration("webhooks.maxBackoff", in: 0...86_400)
        let timeout = try duration("webhooks.timeout", in: 0...3600)
        var hooks: [WebhookConfiguration] = []
        for (hookName, text) in try pairs("webhooks.endpoints") {
            guard let url = URL(string: text), url.host != nil else { throw SettingsError("\(name("webhooks.endpoints")) \(hookName)=\(text): not a URL") }
            guard !hooks.contains(where: { $0.name == hookName }) else { throw SettingsError("\(name("webhooks.endpoints")): \(hookName) is named twice") }
            do {
                var hook = try WebhookConfiguration(name: hookName, url: url, secret: secret)
                hook.scope = scopes.first { $0.0 == hookName }?.1
                hook.table = tables.first { $0.0 == hookName }?.1
                (hook.batchSize, hook.maxFailures, hook.timeout) = (batchSize, maxFailures, timeout)
                (hook.initialBackoff, hook.maxBackoff) = (initialBackoff, max(initialBackoff, maxBackoff))
                hooks.append(hook)
            } catch let error as FerryServerError {
                throw SettingsError("\(name("webhooks.endpoints")): \(error.message)")
            } catch {
                throw SettingsError("\(name("webhooks.endpoints")): \(error)")
            }
        }
        for (hookName, _) in scopes + tables where !hooks.contains(where: { $0.name == hookName }) {
            throw SettingsError("webhook scopes and tables name a webhook of webhooks.endpoints (--webhook); there is no `\(hookName)`")
        }
        return hooks
    }

    private func pairs(_ key: String) throws(SettingsError) -> [(String, String)] {
        try list(key).map { (entry: String) throws(SettingsError) -> (String, String) in
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { throw SettingsError("\(name(key)) \(entry): write name=value") }
            return (parts[0], parts[1])
        }
    }

    /// `text` or `json`.
    func logFormat() throws(SettingsError) -> String {
        let format = text("log.format") ?? "text"
        guard ["text", "json"].contains(format) else { throw SettingsError("\(name("log.format")) must be text or json, not `\(format)`") }
        return format
    }

    /// Where spans are exported (`<endpoint>/v1/traces`), or nil when tracing is off.
    ///
    /// The standard `OTEL_*` variables that would change where or how
    /// spans go are refused: the endpoint is this setting's (flags win over
    /// the environment), and this build exports over OTLP/HTTP alone (a
    /// gRPC or console exporter would stop the server at start).
    func traceEndpoint(environment: [String: String] = ProcessInfo.processInfo.environment) throws(SettingsError) -> URL? {
        guard let text = text("otel.endpoint") else { return nil }
        for name in ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] where !(environment[name] ?? "").isEmpty {
            throw SettingsError("\(name) is set: give the collector with \(self.name("otel.endpoint")) alone")
        }
        for name in ["OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] {
            if let value = environment[name], !value.isEmpty, !["http/protobuf", "http/json"].contains(value) {
                throw SettingsError("\(name)=\(value): ferry-server exports over OTLP/HTTP (http/protobuf or http/json)")
            }
        }
        if let value = environment["OTEL_TRACES_EXPORTER"], !value.isEmpty, value != "otlp" {
            throw SettingsError("OTEL_TRACES_EXPORTER=\(value): ferry-server exports spans over OTLP (otlp) only")
        }
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased()), url.host(percentEncoded: false)?.isEmpty == false,
            url.query == nil
        else { throw SettingsError("\(name("otel.endpoint")) must be an http or https URL such as http://collector:4318, not `\(text)`") }
        return url
    }

    func logLevel() throws(SettingsError) -> Logger.Level {
        let text = text("log.level") ?? "info"
        guard let level = Logger.Level(rawValue: text) else {
            throw SettingsError("\(name("log.level")) must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), not `\(text)`")
        }
        return level
    }
}
