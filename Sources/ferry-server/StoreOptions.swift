import ArgumentParser
import FerryServer
import Foundation

/// Which store a command uses: SQLite in the data directory, or PostgreSQL.
struct StoreOptions: ParsableArguments {
    @Option(
        help:
            "Keep the store in PostgreSQL instead of SQLite: postgres://user:password@host:5432/database[?sslmode=disable|prefer|require] (default: $FERRY_POSTGRES_URL). Many instances may share one database."
    )
    var postgres: String?

    @Option(help: "The most PostgreSQL connections this instance opens.")
    var poolSize: Int = 20

    @Option(help: "Seconds one PostgreSQL statement may run, or wait for a lock, before its request answers 503.")
    var statementTimeout: Double = 30

    func validate() throws {
        guard (1...1000).contains(poolSize) else { throw ValidationError("--pool-size must be 1–1000") }
        guard statementTimeout.isFinite, (0.001...86_400).contains(statementTimeout) else {
            throw ValidationError("--statement-timeout must be 0.001–86400 seconds")
        }
        _ = try postgresConfiguration()
    }

    /// The PostgreSQL store's configuration, if one was asked for.
    func postgresConfiguration() throws -> PostgresStoreConfiguration? {
        guard let url = postgres ?? ProcessInfo.processInfo.environment["FERRY_POSTGRES_URL"], !url.isEmpty else { return nil }
        do {
            var configuration = try PostgresStoreConfiguration(url: url)
            configuration.poolSize = poolSize
            configuration.statementTimeout = .milliseconds(Int64(statementTimeout * 1000))
            configuration.lockTimeout = min(configuration.lockTimeout, configuration.statementTimeout)
            return configuration
        } catch let error as FerryServerError {
            throw ValidationError("--postgres: \(error.message)")
        }
    }

    /// Runs `body` on the chosen store, started and closed around it, for
    /// commands that are not the server.
    func withStore<T>(dataDirectory: URL, _ body: (any SyncStore) async throws -> T) async throws -> T {
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
}
