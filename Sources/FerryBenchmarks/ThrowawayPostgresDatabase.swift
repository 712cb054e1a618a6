import Foundation
import PostgresNIO

/// A PostgreSQL database made for one benchmark run and dropped after it,
/// on the cluster `POSTGRES_HOST`/`POSTGRES_PORT`/`POSTGRES_USER`/
/// `POSTGRES_PASSWORD` name (as `scripts/with-postgres` sets them).
///
/// ```swift
/// let results = try await ThrowawayPostgresDatabase.with(prefix: "ferry_bench") { database in
///     try await run(url: database.url)
/// }
/// ```
struct ThrowawayPostgresDatabase: Sendable {
    var host: String
    var port: Int
    var user: String
    var password: String?
    var name: String

    /// A `postgres://` URL for it, as `ferry-server --postgres` takes.
    var url: String {
        let credentials = password.map { "\(user):\($0)" } ?? user
        return "postgres://\(credentials)@\(host):\(port)/\(name)?sslmode=disable"
    }

    /// A connection configuration for it.
    var connection: PostgresConnection.Configuration {
        PostgresConnection.Configuration(host: host, port: port, username: user, password: password, database: name, tls: .disable)
    }

    /// Creates the database, runs `body`, and drops it whatever happens.
    ///
    /// - throws: ``PostgresStoreBenchmark/NotConfigured`` when no cluster is named.
    static func with<T>(prefix: String, _ body: (ThrowawayPostgresDatabase) async throws -> T) async throws -> T {
        let environment = ProcessInfo.processInfo.environment
        guard let host = environment["POSTGRES_HOST"] else { throw PostgresStoreBenchmark.NotConfigured() }
        let database = ThrowawayPostgresDatabase(
            host: host, port: Int(environment["POSTGRES_PORT"] ?? "") ?? 5432, user: environment["POSTGRES_USER"] ?? "postgres",
            password: environment["POSTGRES_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 },
            name: "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())")
        let admin = PostgresConnection.Configuration(
            host: host, port: database.port, username: database.user,
            password: database.password,
            database: environment["POSTGRES_DB"] ?? "postgres", tls: .disable)
        try await PostgresStoreBenchmark.execute(admin, "CREATE DATABASE \(database.name)")
        do {
            let value = try await body(database)
            try await PostgresStoreBenchmark.execute(admin, "DROP DATABASE \(database.name) WITH (FORCE)")
            return value
        } catch {
            try? await PostgresStoreBenchmark.execute(admin, "DROP DATABASE IF EXISTS \(database.name) WITH (FORCE)")
            throw error
        }
    }
}
