import Crypto
import FerryProtocol
import FerryServer
import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import ServiceLifecycle

/// The store for many server instances: PostgreSQL holds rows, versions,
/// client state and scopes, so instances keep nothing of their own.
///
/// - Pushes run in `SERIALIZABLE` transactions, retried on a serialization
///   failure, so one client's push sent to two instances at once applies
///   once.
/// - Versions come from one sequence. Rows also carry the id of the
///   transaction that wrote them; pulls page by `(xid, version)` and read
///   only below the oldest transaction still running, so a transaction that
///   commits late is never skipped (server semantic 5).
/// - A push notifies the `ferry_changes` channel; every instance listens and
///   tells its live subscribers once the change is readable.
/// - A lost database answers 503 (`FerryServerError` `unavailable`); the
///   connection pool reconnects by itself.
///
/// The store is a `Service`: ``run()`` keeps its connections, creates or
/// migrates the schema, and listens for notifications.
///
/// ```swift
/// let store = PostgresSyncStore(configuration: try PostgresStoreConfiguration(url: "postgres://ferry@localhost/ferry"))
/// let app = try await FerryApplication.build(configuration: serverConfiguration, store: store)
/// try await app.runService()   // runs the store too
/// ```
public final class PostgresSyncStore: SyncStore {
    public let changeFeed = ChangeFeed()
    public let configuration: PostgresStoreConfiguration
    let client: PostgresClient
    let logger: Logger

    enum Phase: Sendable {
        case starting
        case ready(PullCursorCodec)
        case failed(String)
        case closed
    }

    private let phase = NIOLockedValueBox(Phase.starting)
    private let closing: AsyncStream<Void>
    private let closingContinuation: AsyncStream<Void>.Continuation

    public init(configuration: PostgresStoreConfiguration, logger: Logger = Logger(label: "ferry-server.postgres")) {
        self.configuration = configuration
        self.logger = logger
        instanceName = Self.makeInstanceName()
        client = PostgresClient(configuration: Self.clientConfiguration(configuration, instanceName: instanceName), backgroundLogger: logger)
        (closing, closingContinuation) = AsyncStream.makeStream(of: Void.self)
    }

    static func clientConfiguration(_ configuration: PostgresStoreConfiguration, instanceName: String) -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS =
            switch configuration.tls {
            case .disable: .disable
            case .prefer: .prefer(.makeClientConfiguration())
            case .require: .require(.makeClientConfiguration())
            }
        var client = PostgresClient.Configuration(
            host: configuration.host,
            port: configuration.port,
            username: configuration.username,
            password: configuration.password,
            database: configuration.database,
            tls: tls
        )
        client.options.maximumConnections = configuration.poolSize
        client.options.connectTimeout = configuration.connectionTimeout
        client.options.keepAliveBehavior = .init(frequency: .seconds(15))
        client.options.additionalStartupParameters = [
            ("statement_timeout", "\(max(1, configuration.statementTimeout.wholeMilliseconds))"),
            ("lock_timeout", "\(max(1, configuration.lockTimeout.wholeMilliseconds))"),
            // Names this instance in pg_stat_activity: the console lists instances by it.
            ("application_name", instanceName),
        ]
        return client
    }

    /// How this process names itself to PostgreSQL (`application_name`):
    /// host, process id and a random tag, so two instances in one process differ.
    public let instanceName: String

    private static func makeInstanceName() -> String {
        let host = ProcessInfo.processInfo.hostName.prefix(24)
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        return "\(instancePrefix)\(host) pid \(ProcessInfo.processInfo.processIdentifier) #\(tag)"
    }
    static let instancePrefix = "ferry-server "

    /// The store's epoch, once it is ready: cursors from any other epoch get a reset.
    public var epoch: String? {
        if case .ready(let codec) = phase.withLockedValue({ $0 }) { codec.epoch } else { nil }
    }

    // MARK: Lifecycle

    /// Runs the store until ``close()`` or a graceful shutdown: the
    /// connection pool, the schema migration (retried until the database is
    /// reachable), and the listener for other instances' changes.
    ///
    /// - Throws: when the database's schema is newer than this build knows.
    public func run() async throws {
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await self.client.run() }
                group.addTask {
                    try await self.prepare()
                    try await self.listen()
                }
                group.addTask {
                    for await _ in self.closing {}
                }
                // The first task to end (a close, or a fatal error) ends them all.
                defer { group.cancelAll() }
                try await group.next()
            }
        } onGracefulShutdown: {
            self.closingContinuation.finish()
        }
        phase.withLockedValue { $0 = .closed }
        changeFeed.close()
    }

    /// Chunks in this store's database (``PostgresBlobStore``), shared by every instance.
    public func makeBlobStore(maxBlobBytes: Int64) throws -> any BlobStore {
        PostgresBlobStore(store: self, maxBlobBytes: maxBlobBytes)
    }

    /// Stops ``run()``; later calls answer 503.
    public func close() async throws {
        phase.withLockedValue { $0 = .closed }
        changeFeed.close()
        closingContinuation.finish()
    }

    /// Waits until the schema is ready.
    ///
    /// - Throws: `FerryServerError` `unavailable` after `timeout`, or when the store failed or closed.
    public func waitUntilReady(timeout: Duration = .seconds(30)) async throws {
        _ = try await readyCodec(timeout: timeout)
    }

    /// Creates or migrates the schema, retrying while the database is unreachable.
    private func prepare() async throws {
        var delay = Duration.milliseconds(100)
        while true {
            do {
                let codec = try await migrate()
                phase.withLockedValue { phase in
                    if case .starting = phase { phase = .ready(codec) }
                }
                logger.info("PostgreSQL store ready", metadata: ["database": "\(configuration.redactedURL)", "epoch": "\(codec.epoch)"])
                return
            } catch  where Self.isOutage(error) {
                logger.warning("PostgreSQL unreachable; retrying", metadata: ["error": "\(Self.describe(error))"])
                try await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(2))
            } catch {
                // A schema this build cannot use, or SQL the database refuses: retrying cannot help.
                let message = (error as? FerryServerError)?.message ?? Self.describe(error)
                phase.withLockedValue { $0 = .failed(message) }
                logger.critical("PostgreSQL store cannot start", metadata: ["error": "\(message)"])
                throw FerryServerError(.internalError, message)
            }
        }
    }

    func readyCodec(timeout: Duration? = nil) async throws -> PullCursorCodec {
        let deadline = ContinuousClock.now + (timeout ?? configuration.connectionTimeout)
        while true {
            switch phase.withLockedValue({ $0 }) {
            case .ready(let codec):
                return codec
            case .closed:
                throw FerryServerError(.unavailable, "the store is closed")
            case .failed(let reason):
                throw FerryServerError(.unavailable, "the store failed to start: \(reason)")
            case .starting:
                guard ContinuousClock.now < deadline else {
                    throw FerryServerError(.unavailable, "the database is not reachable yet; retry shortly")
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    // MARK: Connections and transactions

    enum Isolation: String {
        case serializable = "SERIALIZABLE"
        case snapshot = "REPEATABLE READ READ ONLY"
        /// No transaction: `body` runs one statement, which reads from a
        /// snapshot of its own, in one round trip instead of three.
        case oneStatement = ""
    }

    /// Runs `body` in a transaction (none for ``Isolation/oneStatement``),
    /// retried on serialization failures and deadlocks; database outages
    /// become `FerryServerError` `unavailable`.
    func transaction<T: Sendable>(
        _ isolation: Isolation,
        _ body: @escaping @Sendable (PostgresConnection, PullCursorCodec) async throws -> T
    ) async throws -> T {
        let codec = try await readyCodec()
        let logger = self.logger
        var attempt = 0
        while true {
            do {
                return try await withConnection { connection in
                    let inTransaction = isolation != .oneStatement
                    if inTransaction {
                        try await connection.query(PostgresQuery(unsafeSQL: "BEGIN ISOLATION LEVEL \(isolation.rawValue)"), logger: logger)
                    }
                    do {
                        let value = try await body(connection, codec)
                        if inTransaction { try await connection.query("COMMIT", logger: logger) }
                        return value
                    } catch {
                        do {
                            if inTransaction { try await connection.query("ROLLBACK", logger: logger) }
                            if PushStatements.mayHaveFailedPreparing(error) { try? await connection.close() }
                        } catch {
                            // The pool drops a closed connection rather than reuse one mid-transaction.
                            try? await connection.close()
                        }
                        throw error
                    }
                }
            } catch let error where Self.isRetryable(error) {
                attempt += 1
                guard attempt < 50 else {
                    throw FerryServerError(.unavailable, "the database is too contended to finish this request; retry shortly")
                }
                let ceiling = min(1 << min(attempt, 6), 50)
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...ceiling)))
            } catch let error as FerryServerError {
                throw error
            } catch let error where Self.isTimeout(error) {
                logger.warning("PostgreSQL statement timed out", metadata: ["error": "\(Self.describe(error))"])
                throw FerryServerError(.unavailable, "the database did not finish this request in time; retry shortly")
            } catch let error where Self.isOutage(error) {
                logger.warning("PostgreSQL unavailable", metadata: ["error": "\(Self.describe(error))"])
                if Self.sqlState(error) == "53100" {
                    throw FerryServerError(.unavailable, "the database has no space left on its disk; nothing was changed, retry once space is freed")
                }
                throw FerryServerError(.unavailable, "the database is unavailable; retry shortly")
            }
        }
    }

    /// Leases a connection, giving up with 503 when none comes within the
    /// configured timeout. Once leased, the work is never cut short.
    private func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let leased = NIOLockedValueBox(false)
        let client = self.client
        let timeout = configuration.connectionTimeout
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await client.withConnection { connection in
                    leased.withLockedValue { $0 = true }
                    return try await body(connection)
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            while let next = try await group.next() {
                if let value = next {
                    group.cancelAll()
                    return value
                }
                if !leased.withLockedValue({ $0 }) {
                    group.cancelAll()
                    throw FerryServerError(.unavailable, "no database connection within \(timeout); retry shortly")
                }
            }
            throw CancellationError()
        }
    }

    static func sqlState(_ error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    /// Serialization failures and deadlocks: the transaction is run again.
    /// So is a duplicate key: a row or client another transaction inserted
    /// after this one's snapshot, which the next attempt will see.
    static func isRetryable(_ error: any Error) -> Bool {
        ["40001", "40P01", "23505"].contains(sqlState(error) ?? "")
    }

    /// A statement ran past `statement_timeout`, or waited past `lock_timeout`.
    static func isTimeout(_ error: any Error) -> Bool {
        ["57014", "55P03"].contains(sqlState(error) ?? "")
    }

    /// The database is down, restarting, or unreachable.
    static func isOutage(_ error: any Error) -> Bool {
        if let error = error as? PSQLError {
            if error.code == .server {
                // Connection exceptions, operator intervention (shutdown), insufficient resources.
                let state = error.serverInfo?[.sqlState] ?? ""
                return ["08", "57", "53"].contains(String(state.prefix(2)))
            }
            return [.serverClosedConnection, .connectionError, .clientClosedConnection, .poolClosed, .uncleanShutdown, .queryCancelled]
                .contains(error.code)
        }
        if error is IOError || error is ChannelError { return true }
        // The pool's own errors (its circuit breaker after failed connection attempts).
        return String(reflecting: type(of: error)).contains("ConnectionPool")
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            let message = error.serverInfo?[.message].map { ": \($0)" } ?? ""
            return "\(error.code)\(message)"
        }
        return "\(error)"
    }
}
