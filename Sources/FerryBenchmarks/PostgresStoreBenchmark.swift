import FerryProtocol
import FerryPostgres
import FerryServer
import Foundation
import Logging
import PostgresNIO

/// The PostgreSQL store on a real cluster (the one `scripts/with-postgres`
/// starts, found through POSTGRES_* variables), in this process:
///
/// - a 100-row pull page from a scope of 1M rows against one of 10k rows,
///   each page following the cursor of the one before (the index range scan
///   must not grow with the scope);
/// - push throughput, in batches of 500 as the client sends them, against a
///   direct batched `INSERT` of the same rows into a table with the same
///   columns and indexes as the store's row table. Each side's input is
///   made before its clock starts: the push requests, and the baseline's
///   rows encoded.
public struct PostgresStoreBenchmark: Sendable {
    public var bigScopeRows: Int
    public var smallScopeRows: Int
    public var pageRows = 100
    public var pagesPerWalk = 50
    public var pushRows: Int
    public var pushBatch = 500

    public init(bigScopeRows: Int = 1_000_000, smallScopeRows: Int = 10_000, pushRows: Int = 20_000) {
        self.bigScopeRows = bigScopeRows
        self.smallScopeRows = smallScopeRows
        self.pushRows = pushRows
    }

    /// A cluster is configured (POSTGRES_HOST is set).
    public static var isConfigured: Bool {
        ProcessInfo.processInfo.environment["POSTGRES_HOST"].map { !$0.isEmpty } ?? false
    }

    struct NotConfigured: Error, CustomStringConvertible {
        var description: String { "no PostgreSQL cluster: run `scripts/with-postgres swift run -c release ferry-bench postgres-store`" }
    }

    static let logger: Logger = {
        var logger = Logger(label: "ferry-bench.postgres")
        logger.logLevel = .error
        return logger
    }()

    public func run() async throws -> [BenchmarkResult] {
        try await ThrowawayPostgresDatabase.with(prefix: "ferry_bench") { database in
            var configuration = PostgresStoreConfiguration(
                host: database.host, port: database.port, username: database.user,
                password: database.password, database: database.name, tls: .disable)
            configuration.poolSize = 4
            let store = PostgresSyncStore(configuration: configuration, logger: Self.logger)
            let running = Task { try await store.run() }
            defer { running.cancel() }
            do {
                try await store.waitUntilReady()
                var results: [BenchmarkResult] = []
                results.append(try await pullPages(store, database: database.connection))
                results.append(try await pushes(store, database: database.connection))
                try await store.close()
                _ = try? await running.value
                return results
            } catch {
                try? await store.close()
                _ = try? await running.value
                throw error
            }
        }
    }

    // MARK: Pull pages

    private func pullPages(_ store: PostgresSyncStore, database: PostgresConnection.Configuration) async throws -> BenchmarkResult {
        // Seeded in SQL, with the cells a push writes: name, qty and note per row.
        try await Self.execute(
            database,
            """
            INSERT INTO ferry_rows (scope, tbl, row_id, version, xid, deleted, client_id, changed_at, cells)
            SELECT s.scope, 'item', 'row-' || i, s.base + i, 2, false, 'bench:seed', 0,
                '{"name":{"clientID":"bench:seed","hlc":117656722145280000,"value":"item ' || i || '","version":' || (s.base + i) || '},'
                || '"note":{"clientID":"bench:seed","hlc":117656722145280000,"value":"a note of some forty characters, or so","version":' || (s.base + i) || '},'
                || '"qty":{"clientID":"bench:seed","hlc":117656722145280000,"value":' || (i % 97) || ',"version":' || (s.base + i) || '}}'
            FROM (VALUES ('user:big', \(bigScopeRows), 0), ('user:small', \(smallScopeRows), 10000000)) AS s(scope, n, base),
                generate_series(1, s.n) AS i
            """)
        try await Self.execute(database, "SELECT setval('ferry_versions', 20000000)")
        try await Self.execute(database, "VACUUM ANALYZE ferry_rows")

        var big: [Duration] = []
        var small: [Duration] = []
        for _ in 0..<5 {
            big += try await walk(store, scope: "user:big")
            small += try await walk(store, scope: "user:small")
        }
        let bigMedian = median(big), smallMedian = median(small)
        return BenchmarkResult(
            scenario: "postgres: 100-row pull page, scope of \(countLabel(bigScopeRows)) vs \(countLabel(smallScopeRows)) (median of \(big.count))",
            ferry: format(bigMedian),
            baseline: format(smallMedian),
            ratio: seconds(bigMedian) / seconds(smallMedian),
            goal: 1.2,
            direction: .atMost
        )
    }

    /// Pulls `pagesPerWalk` pages from scratch, each after the previous cursor.
    private func walk(_ store: PostgresSyncStore, scope: String) async throws -> [Duration] {
        var cursor: String?
        var times: [Duration] = []
        let clock = ContinuousClock()
        for _ in 0..<pagesPerWalk {
            let request = PullRequest(clientID: "bench-reader", scopes: [.init(scope: scope, cursor: cursor)])
            var response: PullResponse?
            times.append(
                try await clock.measure {
                    response = try await store.pull(request, userID: "bench", limit: pageRows)
                })
            guard let page = response?.pages.first, page.changes.count == pageRows else {
                throw BenchmarkError("a page of \(scope) held \(response?.pages.first?.changes.count ?? 0) rows, not \(pageRows)")
            }
            cursor = page.cursor
        }
        return times
    }

    // MARK: Pushes

    private func pushes(_ store: PostgresSyncStore, database: PostgresConnection.Configuration) async throws -> BenchmarkResult {
        try await Self.execute(database, "CREATE TABLE plain_rows (LIKE ferry_rows INCLUDING ALL)")
        let stamp = HLCTimestamp(wallMilliseconds: Int64(Date().timeIntervalSince1970 * 1000), counter: 0)
        func columns(_ index: Int) -> [String: ColumnValue] {
            ["name": .text("item \(index)"), "qty": .integer(Int64(index % 97)), "note": .text("a note of some forty characters, or so")]
        }
        var ferry: [Double] = []
        var plain: [Double] = []
        let clock = ContinuousClock()
        for round in 0..<2 {
            // Baseline: the same rows, already encoded, one INSERT … SELECT unnest per batch.
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            var batches: [(ids: [String], cells: [String], versions: [Int64])] = []
            for start in stride(from: 0, to: pushRows, by: pushBatch) {
                let range = start..<min(start + pushBatch, pushRows)
                batches.append(
                    (
                        range.map { "plain-\(round)-\($0)" },
                        try range.map { index in
                            String(
                                decoding: try encoder.encode(
                                    columns(index).mapValues {
                                        StoredCellJSON(clientID: "bench:push", hlc: stamp, value: $0, version: Int64(index + 1))
                                    }), as: UTF8.self)
                        },
                        range.map { Int64($0 + 1) }
                    ))
            }
            let plainTime = try await clock.measure {
                try await Self.withConnection(database) { connection in
                    for batch in batches {
                        try await connection.query(
                            """
                            INSERT INTO plain_rows (scope, tbl, row_id, version, xid, deleted, client_id, changed_at, cells)
                            SELECT 'user:bench', 'item', u.row_id, u.version, pg_current_xact_id()::text::bigint, false, 'bench:push', 0, u.cells
                            FROM unnest(\(batch.ids)::text[], \(batch.versions)::int8[], \(batch.cells)::text[]) AS u(row_id, version, cells)
                            """, logger: Self.logger)
                    }
                }
            }
            plain.append(Double(pushRows) / seconds(plainTime))

            // Ferry: the client's batches through the store's push, made before the clock starts as the
            // baseline's rows are encoded before it.
            let client = "bench-push-\(round)"
            let requests = stride(from: 0, to: pushRows, by: pushBatch).map { start in
                PushRequest(
                    clientID: client,
                    mutations: (start..<min(start + pushBatch, pushRows)).map { index in
                        Mutation(
                            mutationID: Int64(index + 1), table: "item", rowID: "push-\(round)-\(index)", scope: "user:bench",
                            operation: .upsert, columns: columns(index), baseVersion: nil, hlc: stamp)
                    })
            }
            let pushTime = try await clock.measure {
                for request in requests {
                    let receipt = try await store.push(request, userID: "bench", rules: PushRules())
                    guard receipt.response.lastAppliedMutationID == request.mutations.last?.mutationID else {
                        throw BenchmarkError("the push of mutations from \(request.mutations[0].mutationID) was not applied")
                    }
                }
            }
            ferry.append(Double(pushRows) / seconds(pushTime))
        }
        let ferryBest = ferry.max() ?? 0, plainBest = plain.max() ?? 1
        return BenchmarkResult(
            scenario: "postgres: push \(countLabel(pushRows)) rows in batches of \(pushBatch) vs direct batched INSERT (best of 2)",
            ferry: String(format: "%.0f rows/s", ferryBest),
            baseline: String(format: "%.0f rows/s", plainBest),
            ratio: ferryBest / plainBest,
            goal: 0.5,
            direction: .atLeast
        )
    }

    // MARK: Helpers

    static func execute(_ configuration: PostgresConnection.Configuration, _ sql: String) async throws {
        try await withConnection(configuration) { connection in
            _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
        }
    }

    static func withConnection<T: Sendable>(_ configuration: PostgresConnection.Configuration, _ body: (PostgresConnection) async throws -> T) async throws -> T {
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
