@testable import FerryPostgres
@testable import FerryServer
import FerryProtocol
import Foundation
import Logging
import PostgresNIO
import Testing
import FerryTestSupport

/// What only the PostgreSQL store has: transactions that commit out of
/// order, query plans, schema versions, and a database that can go away.
/// (The rules every store keeps are in ``SyncStoreConformanceTests``.)
@Suite(.postgresTurns, .enabled(if: PostgresTestDatabase.shouldRun), .serialized)
struct PostgresStoreTests {
    // Made at each use, so its `now` is the push's (see SyncStoreConformanceTests.rules).
    static var rules: PushRules { PushRules() }

    func pullToEnd(_ store: any SyncStore, cursor: String?, client: String = "follower") async throws -> (rows: [String], cursor: String?) {
        var cursor = cursor
        var rows: [String] = []
        while true {
            let page = try await store.pull(PullRequest(clientID: client, scopes: [.init(scope: "user:alice", cursor: cursor)]), userID: "alice", limit: 100).pages[0]
            rows += page.changes.map(\.rowID)
            cursor = page.cursor
            if !page.hasMore { return (rows, cursor) }
        }
    }

    /// A transaction holding an earlier version commits after one holding a
    /// later version, while pulls run. A cursor by version alone would jump
    /// over the late one; the (xid, version) cursor below the snapshot's
    /// xmin must not. (SQLite has one writer, so its commits cannot reorder.)
    ///
    /// The slow transaction writes its row as a push does (a version from
    /// the sequence, the transaction's own xid) on a connection the test
    /// holds open; the fast one is a real push through the store.
    @Test func outOfOrderCommitsAreNeverSkipped() async throws {
        try await StoreUnderTest.with(.postgres) { server in
            let store = server.store
            var (seen, cursor) = try await pullToEnd(store, cursor: nil)
            #expect(seen.isEmpty)
            let database = try #require(server.database)
            let cells = try StoreCoding.json([
                "title": StoredCell(
                    value: "slow", version: 0, hlc: HLCTimestamp(wallMilliseconds: 1, counter: 0), clientID: "alice:slow"
                )
            ])
            let (slowVersion, fastVersion, pulledWhileOpen) = try await database.withConnection { slow in
                try await slow.query("BEGIN", logger: PostgresTestDatabase.logger)
                var slowVersion: Int64 = 0
                for try await version in try await slow.query("SELECT nextval('ferry_versions')", logger: PostgresTestDatabase.logger).decode(Int64.self) {
                    slowVersion = version
                }
                try await slow.query(
                    """
                    INSERT INTO ferry_rows (scope, tbl, row_id, version, xid, deleted, client_id, changed_at, cells)
                    VALUES ('user:alice', 'note', 'slow', \(slowVersion), pg_current_xact_id()::text::bigint, false, 'alice:slow', 0, \(cells))
                    """, logger: PostgresTestDatabase.logger)

                // A later version commits first.
                let fast = try await store.push(
                    PushRequest(clientID: "fast", mutations: [Mutations.upsert(1, row: "fast", ["title": "fast"])]),
                    userID: "alice", rules: Self.rules
                )
                // Pulls while the slow transaction is still open.
                var pulled: [String] = []
                for _ in 0..<5 {
                    let page = try await pullToEnd(store, cursor: cursor)
                    pulled += page.rows
                    cursor = page.cursor
                }
                try await slow.query("COMMIT", logger: PostgresTestDatabase.logger)
                return (slowVersion, try #require(fast.response.results.first?.version), pulled)
            }
            #expect(slowVersion < fastVersion, "the commits must be in the reverse order of their versions")
            // Nothing behind the open transaction is handed out while it runs.
            #expect(pulledWhileOpen.isEmpty)
            seen += pulledWhileOpen
            seen += try await pullToEnd(store, cursor: cursor).rows
            #expect(Set(seen) == ["slow", "fast"])
            #expect(seen.count == 2)
        }
    }

    /// The pull page and the push's lookups are index range scans, at a size
    /// where the planner would rather scan the table if it could.
    @Test func pullAndPushQueriesUseTheirIndexes() async throws {
        try await StoreUnderTest.with(.postgres) { server in
            let database = try #require(server.database)
            for statement in [
                """
                INSERT INTO ferry_rows (scope, tbl, row_id, version, xid, deleted, client_id, changed_at, cells)
                SELECT 'user:u' || (i % 100), 'note', 'r' || i, i, 1000 + i / 10, false, 'c', 0, '{}'
                FROM generate_series(1, 50000) AS i
                """,
                """
                INSERT INTO ferry_results (user_id, client_id, mutation_id, version, xid, result)
                SELECT 'u' || (i % 100), 'c', i, i, 1000 + i, '{}' FROM generate_series(1, 50000) AS i
                """,
                """
                INSERT INTO ferry_applied_runs (user_id, client_id, first_mutation_id, last_mutation_id, first_version, version, xid)
                SELECT 'u' || (i % 100), 'c', i * 500, i * 500 + 499, i * 500, i * 500, 1000 + i FROM generate_series(1, 50000) AS i
                """,
                "INSERT INTO ferry_clients (user_id, client_id, last_mutation_id, xid) SELECT 'u' || i, 'c', 500, 1000 FROM generate_series(1, 20000) AS i",
                "ANALYZE",
            ] {
                try await database.execute(statement)
            }
            let postgres = try #require(server.store as? PostgresSyncStore)
            func plan(_ query: PostgresQuery) async throws -> String {
                try await postgres.client.withConnection { connection in
                    var lines: [String] = []
                    let explain = PostgresQuery(unsafeSQL: "EXPLAIN " + query.sql, binds: query.binds)
                    for try await line in try await connection.query(explain, logger: PostgresTestDatabase.logger).decode(String.self) {
                        lines.append(line)
                    }
                    return lines.joined(separator: "\n")
                }
            }
            let pull = try await plan(
                PostgresSyncStore.pageQuery(
                    scope: "user:u7", after: ChangePosition(major: 2000, minor: 9000), below: 1_000_000, withTombstones: true, limit: 101
                ))
            print("EXPLAIN pull page:\n\(pull)")
            #expect(pull.contains("Index Scan using ferry_rows_by_scope_position"))
            #expect(!pull.contains("Seq Scan"))

            // A prepared statement: its first five runs on a connection are planned for their keys,
            // then PostgreSQL may keep one plan for any keys (a generic plan). Both probe the key.
            let keys = (1...200).map { RowKey(scope: "user:u\($0 % 100)", table: "note", rowID: "r\($0)") }
            let custom = try await plan(PostgresQuery(unsafeSQL: PushStatements.LookUpRows.sql, binds: PushStatements.LookUpRows(keys: keys).makeBindings()))
            func literal(_ values: [String]) -> String { "'{" + values.joined(separator: ",") + "}'::text[]" }
            let generic = try await postgres.client.withConnection { connection in
                let logger = PostgresTestDatabase.logger
                do {
                    try await connection.query("SET plan_cache_mode = force_generic_plan", logger: logger)
                    try await connection.query(PostgresQuery(unsafeSQL: "PREPARE lookup AS " + PushStatements.LookUpRows.sql), logger: logger)
                    var lines: [String] = []
                    let explain = PostgresQuery(
                        unsafeSQL: "EXPLAIN EXECUTE lookup(\(literal(keys.map(\.scope))), \(literal(keys.map(\.table))), \(literal(keys.map(\.rowID))))")
                    for try await line in try await connection.query(explain, logger: logger).decode(String.self) {
                        lines.append(line)
                    }
                    try await connection.query("DEALLOCATE lookup", logger: logger)
                    try await connection.query("RESET plan_cache_mode", logger: logger)
                    return lines.joined(separator: "\n")
                } catch {
                    // Not back into the pool with the setting or the statement.
                    try? await connection.close()
                    throw error
                }
            }
            for (name, lookup) in [("custom", custom), ("generic", generic)] {
                print("EXPLAIN push row lookup (\(name)):\n\(lookup)")
                #expect(lookup.contains("ferry_rows_pkey"), "\(name)")
                #expect(!lookup.contains("Seq Scan on ferry_rows"), "\(name)")
            }

            let client = try await plan("SELECT last_mutation_id FROM ferry_clients WHERE user_id = \("u7") AND client_id = \("c")")
            #expect(client.contains("ferry_clients_pkey"))
            // The pull's head: the client by its key, and its results and runs (read when its last push is not yet below the horizon) by theirs.
            let head = try await plan(PostgresQuery(unsafeSQL: PullStatements.Head.sql, binds: PullStatements.Head(userID: "u7", clientID: "c").makeBindings()))
            print("EXPLAIN pull head:\n\(head)")
            #expect(head.contains("ferry_clients_pkey"))
            #expect(head.contains("ferry_results_pkey") && head.contains("ferry_applied_runs_pkey"))
            #expect(!head.contains("Seq Scan on ferry_clients") && !head.contains("Seq Scan on ferry_results") && !head.contains("Seq Scan on ferry_applied_runs"))
            let replay = try await plan(
                """
                SELECT mutation_id, result FROM ferry_results
                WHERE user_id = \("u7") AND client_id = \("c") AND mutation_id = ANY(\([Int64(7), 107, 207])::int8[])
                """)
            print("EXPLAIN replayed results:\n\(replay)")
            #expect(replay.contains("ferry_results_pkey"))
            // u7's runs are every hundredth: a replay of ids inside one reads an index range, not the client's every run.
            let runs = try await plan(PostgresSyncStore.appliedRunsQuery(userID: "u7", clientID: "c", from: 7 * 500 + 3, through: 7 * 500 + 9))
            print("EXPLAIN replayed runs:\n\(runs)")
            #expect(runs.contains("ferry_applied_runs_pkey"))
            #expect(!runs.contains("Seq Scan"))
        }
    }

    /// A push of new rows runs without the row lookup (`NewRowPush`), and a
    /// push that meets a stored row runs it; each statement is prepared once
    /// on its connection. With a pool of one connection, the test reads what
    /// that connection prepared, and how often each ran.
    @Test func aPushOfNewRowsSkipsTheLookupAndStatementsArePreparedOnce() async throws {
        try await withOwnStore(setting: \.poolSize, to: 1) { store, _ in
            func prepared() async throws -> [String: Int64] {
                try await store.client.withConnection { connection in
                    var runs: [String: Int64] = [:]
                    let query: PostgresQuery = "SELECT name, generic_plans + custom_plans FROM pg_prepared_statements WHERE name LIKE 'ferry_pu%'"
                    for try await (name, count) in try await connection.query(query, logger: PostgresTestDatabase.logger).decode((String, Int64).self) {
                        runs[name] = count
                    }
                    return runs
                }
            }
            for push in 1...3 {
                let id = Int64(push)
                _ = try await store.push(
                    PushRequest(clientID: "c1", mutations: [Mutations.upsert(id, row: "new\(push)", ["title": "t"])]), userID: "alice", rules: Self.rules)
            }
            let afterNew = try await prepared()
            // The new rows go with the client's state, and the results with the notification.
            #expect(afterNew["ferry_push_client"] == 3)
            #expect(afterNew["ferry_push_finish"] == 3)
            #expect(afterNew["ferry_push_start"] == 3)
            #expect(afterNew["ferry_push_rows"] == nil, "no push of new rows read its rows")

            // Another device creates a row that exists: the insert fails, and the retry reads.
            let met = try await store.push(
                PushRequest(clientID: "c2", mutations: [Mutations.upsert(1, row: "new1", ["body": "b"])]), userID: "alice", rules: Self.rules)
            #expect(met.response.results.map(\.status) == [.merged])
            let afterMet = try await prepared()
            #expect(afterMet["ferry_push_rows"] == 1)
            #expect(afterMet["ferry_push_client"] == 5, "the failed insert ran once, then the retry recorded the client")
            #expect(afterMet["ferry_push_update_rows"] == 1)
            #expect(afterMet["ferry_push_start"] == 5, "two attempts")

            // A pull's horizon, last applied id and notice start come from one prepared statement.
            for _ in 1...2 {
                let pulled = try await store.pull(PullRequest(clientID: "c1", scopes: [.init(scope: "user:alice")]), userID: "alice", limit: 10)
                #expect(pulled.lastAppliedMutationID == 3)
                #expect(pulled.pages.first?.changes.count == 3)
            }
            #expect(try await prepared()["ferry_pull_head"] == 2)
        }
    }

    /// The schema records its version; a database migrated by a newer Ferry
    /// is refused with a message that says so, instead of being written to.
    @Test func theSchemaIsVersionedAndANewerOneIsRefused() async throws {
        let database = try await PostgresTestDatabase.create()
        do {
            let configuration = try PostgresStoreConfiguration(url: database.url)
            let first = PostgresSyncStore(configuration: configuration, logger: Self.quietLogger)
            let running = Task { try await first.run() }
            try await first.waitUntilReady()
            try await first.close()
            try await running.value
            let versions = try await database.rows("SELECT version::text FROM ferry_schema_migrations ORDER BY ferry_schema_migrations.version")
            #expect(versions == (1...PostgresSchema.latestVersion).map(String.init))

            try await database.execute("INSERT INTO ferry_schema_migrations (version) VALUES (\(PostgresSchema.latestVersion + 1))")
            let second = PostgresSyncStore(configuration: configuration, logger: Self.quietLogger)
            let error = await #expect(throws: FerryServerError.self) { try await second.run() }
            #expect(error?.message.contains("newer than this ferry-server knows") == true)
            let refused = await #expect(throws: FerryServerError.self) {
                try await second.pull(PullRequest(clientID: "c", scopes: [.init(scope: "user:alice")]), userID: "alice", limit: 10)
            }
            #expect(refused?.code == .unavailable)
        } catch {
            try? await database.drop()
            throw error
        }
        try await database.drop()
    }

    /// With the database stopped, calls fail fast with `unavailable` (503),
    /// and work again once it is back, with nothing restarted by hand.
    @Test func aLostDatabaseIsUnavailableAndTheStoreRecoversByItself() async throws {
        let database = try await PostgresTestDatabase.create()
        var configuration = try PostgresStoreConfiguration(url: database.url)
        configuration.connectionTimeout = .seconds(1)
        let store = PostgresSyncStore(configuration: configuration, logger: Self.quietLogger)
        let running = Task { try await store.run() }
        do {
            try await store.waitUntilReady()
            _ = try await store.push(PushRequest(clientID: "c1", mutations: [Mutations.upsert(1, ["t": "before"])]), userID: "alice", rules: Self.rules)
            try PostgresTestDatabase.controlCluster("stop", "-m", "fast")
            let started = ContinuousClock.now
            let error = await #expect(throws: FerryServerError.self) {
                try await store.push(PushRequest(clientID: "c1", mutations: [Mutations.upsert(2, ["t": "during"])]), userID: "alice", rules: Self.rules)
            }
            #expect(error?.code == .unavailable)
            #expect(error?.status == 503)
            #expect(ContinuousClock.now - started < .seconds(5))
            try PostgresTestDatabase.controlCluster("start")
            var pushed: PushReceipt?
            let deadline = ContinuousClock.now + .seconds(20)
            while pushed == nil, ContinuousClock.now < deadline {
                pushed = try? await store.push(PushRequest(clientID: "c1", mutations: [Mutations.upsert(2, ["t": "after"])]), userID: "alice", rules: Self.rules)
                if pushed == nil { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(pushed?.response.lastAppliedMutationID == 2)
            let page = try await store.pull(PullRequest(clientID: "c1", scopes: [.init(scope: "user:alice")]), userID: "alice", limit: 10)
            #expect(page.pages[0].changes.map(\.values) == [["t": "after"]])
        } catch {
            try? PostgresTestDatabase.controlCluster("start")
            try? await store.close()
            try? await database.drop()
            throw error
        }
        try await store.close()
        try await running.value
        try await database.drop()
    }

    /// A request stuck behind a lock someone holds answers 503 within the
    /// lock timeout instead of hanging, and the store works once it is free.
    @Test func aStuckRequestAnswersUnavailableInsteadOfHanging() async throws {
        try await withOwnStore(setting: \.lockTimeout, to: .milliseconds(300)) { store, database in
            let push = PushRequest(clientID: "c1", mutations: [Mutations.upsert(1, ["t": "a"])])
            try await database.withConnection { holder in
                try await holder.query("BEGIN", logger: PostgresTestDatabase.logger)
                try await holder.query("LOCK TABLE ferry_clients IN ACCESS EXCLUSIVE MODE", logger: PostgresTestDatabase.logger)
                let started = ContinuousClock.now
                let error = await #expect(throws: FerryServerError.self) {
                    try await store.push(push, userID: "alice", rules: Self.rules)
                }
                #expect(error?.code == .unavailable)
                #expect(ContinuousClock.now - started < .seconds(5))
                try await holder.query("ROLLBACK", logger: PostgresTestDatabase.logger)
            }
            #expect(try await store.push(push, userID: "alice", rules: Self.rules).response.lastAppliedMutationID == 1)
            // The statement limit is the connection's, set when it opened.
            let limits = try await store.client.withConnection { connection in
                var shown: [String] = []
                for name in ["statement_timeout", "lock_timeout"] {
                    for try await value in try await connection.query(PostgresQuery(unsafeSQL: "SHOW \(name)"), logger: PostgresTestDatabase.logger)
                        .decode(String.self)
                    {
                        shown.append(value)
                    }
                }
                return shown
            }
            #expect(limits == ["30s", "300ms"])
        }
    }

    /// Runs `body` with a store of its own on a new database, its
    /// configuration's `setting` set to `value`; the store is closed and the
    /// database dropped whatever `body` does.
    func withOwnStore<Value>(
        setting: WritableKeyPath<PostgresStoreConfiguration, Value>, to value: Value,
        _ body: (PostgresSyncStore, PostgresTestDatabase) async throws -> Void
    ) async throws {
        let database = try await PostgresTestDatabase.create()
        var configuration = try PostgresStoreConfiguration(url: database.url)
        configuration[keyPath: setting] = value
        let store = PostgresSyncStore(configuration: configuration, logger: Self.quietLogger)
        let running = Task { try await store.run() }
        do {
            try await store.waitUntilReady()
            try await body(store, database)
        } catch {
            try? await store.close()
            _ = try? await running.value
            try? await database.drop()
            throw error
        }
        try await store.close()
        try await running.value
        try await database.drop()
    }

    static var quietLogger: Logger {
        var logger = Logger(label: "postgres-store-tests")
        logger.logLevel = .critical
        return logger
    }
}

/// PostgreSQL URLs, as `ferry-server serve --postgres` takes them.
@Suite(.postgresTurns) struct PostgresStoreConfigurationTests {
    @Test func aFullURLIsRead() throws {
        let configuration = try PostgresStoreConfiguration(url: "postgres://ferry:s%40cret@db.internal:6543/sync?sslmode=require")
        #expect(configuration.host == "db.internal")
        #expect(configuration.port == 6543)
        #expect(configuration.username == "ferry")
        #expect(configuration.password == "s@cret")
        #expect(configuration.database == "sync")
        #expect(configuration.tls == .require)
        #expect(configuration.redactedURL == "postgres://ferry:***@db.internal:6543/sync?sslmode=require")
    }

    @Test func defaultsAreLibpqs() throws {
        let configuration = try PostgresStoreConfiguration(url: "postgresql://ferry@localhost/ferry")
        #expect(configuration.port == 5432)
        #expect(configuration.password == nil)
        #expect(configuration.tls == .prefer)
    }

    @Test(arguments: [
        ("mysql://u@h/d", "is not a PostgreSQL URL"),
        ("postgres://u@h", "names no database"),
        ("postgres://h/d", "names no user"),
        ("postgres://u:p@h/d?sslmode=maybe", "sslmode must be"),
        ("postgres://u@h/d?connect_timeout=3", "is not supported"),
    ])
    func badURLsSayWhatIsWrongWithoutThePassword(url: String, message: String) throws {
        let error = #expect(throws: FerryServerError.self) { try PostgresStoreConfiguration(url: url) }
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(":p@") != true)
    }
}
