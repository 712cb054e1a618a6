import Foundation
import Logging
import PostgresNIO

/// A throwaway database in the PostgreSQL cluster that `scripts/with-postgres`
/// started, found through its POSTGRES_* variables.
///
/// Outside CI, tests that need PostgreSQL are skipped when no cluster is
/// configured; with `CI=true` they run and fail, so a skip can never pass CI.
public struct PostgresTestDatabase: Sendable {
    public let name: String
    public let host: String
    public let port: Int
    public let user: String
    public let password: String?

    /// `postgres://…` for this database.
    public var url: String {
        let credentials = password.map { "\(user):\($0)" } ?? user
        return "postgres://\(credentials)@\(host):\(port)/\(name)?sslmode=disable"
    }

    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// A cluster is configured.
    public static var isConfigured: Bool {
        environment["POSTGRES_HOST"].map { !$0.isEmpty } ?? false
    }

    /// PostgreSQL tests must run: CI sets `CI=true`.
    public static var isRequired: Bool {
        ["true", "1"].contains(environment["CI"]?.lowercased() ?? "")
    }

    /// Whether PostgreSQL tests run here: a cluster is configured, or they are required.
    public static var shouldRun: Bool { isConfigured || isRequired }

    public struct NotConfigured: Error, CustomStringConvertible {
        public var description: String {
            "PostgreSQL is not configured (no POSTGRES_HOST); run the tests through scripts/with-postgres, as README.md says"
        }
    }

    /// Creates an empty database with a fresh name, once the test case has
    /// the cluster's turn (its suite carries ``PostgresTurns``).
    public static func create() async throws -> PostgresTestDatabase {
        guard isConfigured, let host = environment["POSTGRES_HOST"] else { throw NotConfigured() }
        guard let turn = PostgresTurns.Turn.current else { throw NoTurn() }
        try await turn.take()
        let database = PostgresTestDatabase(
            name: "ferry_test_\(UUID().uuidString.prefix(13).lowercased().replacingOccurrences(of: "-", with: "_"))",
            host: host,
            port: Int(environment["POSTGRES_PORT"] ?? "") ?? 5432,
            user: environment["POSTGRES_USER"] ?? "postgres",
            password: environment["POSTGRES_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
        )
        try await database.administer("CREATE DATABASE \(database.name)")
        return database
    }

    /// Drops the database when the test case ends, before the cluster's
    /// turn passes on (so the drop never holds back another test's pulls);
    /// for a `defer`, which cannot wait.
    public func dropAtEnd() {
        guard let turn = PostgresTurns.Turn.current else {
            Task { try? await drop() }
            return
        }
        turn.atEnd { try? await drop() }
    }

    /// Drops the database, ending its connections.
    public func drop() async throws {
        try await administer("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }

    /// Runs `sql` in this database.
    public func execute(_ sql: String) async throws {
        try await Self.withConnection(host: host, port: port, user: user, password: password, database: name) { connection in
            _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Self.logger)
        }
    }

    /// The text of every row `sql` returns, one string per row (columns joined by `|`).
    public func rows(_ sql: String) async throws -> [String] {
        try await Self.withConnection(host: host, port: port, user: user, password: password, database: name) { connection in
            var lines: [String] = []
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Self.logger) {
                lines.append(row.map { cell in cell.bytes.map { String(buffer: $0) } ?? "NULL" }.joined(separator: "|"))
            }
            return lines
        }
    }

    public struct NoTurn: Error, CustomStringConvertible {
        public var description: String {
            "a test created a PostgreSQL database outside a test case that takes the cluster's turn: add .postgresTurns to its suite"
        }
    }

    /// Runs the test cluster's pg_ctl (`stop -m fast`, `start`,
    /// `restart -m immediate`…), as `scripts/with-postgres` exports it.
    ///
    /// Through the shell's `system`: Foundation's `Process` on Linux keeps
    /// reporting a `pg_ctl start` as running while the server it left behind lives.
    public static func controlCluster(_ arguments: String...) throws {
        guard let script = environment["FERRY_TEST_PG_CTL"] else { throw NotConfigured() }
        let status = system("'\(script)' \(arguments.joined(separator: " ")) >/dev/null 2>&1 </dev/null")
        guard status == 0 else { throw ClusterControlFailed(arguments: arguments, status: status) }
    }

    /// The cluster can be stopped and started by the tests.
    public static var canControlCluster: Bool { environment["FERRY_TEST_PG_CTL"] != nil }

    public struct ClusterControlFailed: Error, CustomStringConvertible {
        public var arguments: [String]
        public var status: Int32
        public var description: String { "pg_ctl \(arguments.joined(separator: " ")) exited with \(status)" }
    }

    /// Runs `body` on a connection of its own to this database: for tests
    /// that hold a transaction open while the code under test runs.
    public func withConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await Self.withConnection(host: host, port: port, user: user, password: password, database: name, body)
    }

    /// Every row of every table in the database's schema but `excluding`,
    /// as text, sorted, in one round trip: equal dumps mean nothing stored
    /// changed.
    public func dump(excluding: Set<String> = []) async throws -> [String] {
        try await withConnection { connection in
            var tables: [String] = []
            let listing = "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1"
            for try await (table) in try await connection.query(PostgresQuery(unsafeSQL: listing), logger: Self.logger).decode(String.self)
            where !excluding.contains(table) {
                tables.append(table)
            }
            guard !tables.isEmpty else { return [] }
            let dump = tables.map { "SELECT '\($0): ' || t::text FROM \($0) t" }.joined(separator: " UNION ALL ") + " ORDER BY 1"
            var lines: [String] = []
            for try await (line) in try await connection.query(PostgresQuery(unsafeSQL: dump), logger: Self.logger).decode(String.self) {
                lines.append(line)
            }
            return lines
        }
    }

    /// The database as libpq's tools (`pg_dump`, `psql`) take it.
    public var toolURL: String {
        url.replacingOccurrences(of: "?sslmode=disable", with: "")
    }

    /// Backs the database up with `pg_dump` into a SQL file, as an operator would.
    public func pgDump(to path: String) throws {
        try Self.shell("pg_dump --no-owner '\(toolURL)' > '\(path)'")
    }

    /// Loads a `pg_dump` file into this database with `psql`, stopping at the first error.
    public func load(dump path: String) throws {
        try Self.shell("psql -q -v ON_ERROR_STOP=1 '\(toolURL)' < '\(path)'")
    }

    public struct ToolFailed: Error, CustomStringConvertible {
        public var command: String
        public var status: Int32
        public var description: String { "`\(command)` exited \(status)" }
    }

    private static func shell(_ command: String) throws {
        let process = Process()
        process.executableURL = URL(filePath: "/bin/sh")
        process.arguments = ["-c", command]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ToolFailed(command: command, status: process.terminationStatus) }
    }

    /// Runs `sql` in the cluster's maintenance database: for what cannot
    /// run inside this one (dropping a tablespace it used, say).
    public func administer(_ sql: String) async throws {
        let maintenance = Self.environment["POSTGRES_DB"] ?? "postgres"
        try await Self.withConnection(host: host, port: port, user: user, password: password, database: maintenance) { connection in
            _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Self.logger)
        }
    }

    public static let logger = Logger(label: "ferry-tests.postgres")

    private static func withConnection<T: Sendable>(
        host: String, port: Int, user: String, password: String?, database: String,
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let configuration = PostgresConnection.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: .disable
        )
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        do {
            let value = try await body(connection)
            try await connection.close()
            return value
        } catch {
            try? await connection.close()
            throw error
        }
    }
}
