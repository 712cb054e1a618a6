import FerryServer
import PostgresNIO

/// The statements every push runs, each prepared once per connection under
/// a fixed name, `ferry_push_…`. PostgreSQL parses a prepared statement
/// once, and after five runs settles on one plan for any parameters, where
/// it parsed and planned an unnamed one on every push, copying the push's
/// arrays into the plan as it went.
///
/// ```swift
/// for try await start in try await connection.execute(
///     PushStatements.Start(userID: "alice", clientID: "phone", mutationIDs: [1, 2, 3]), logger: logger) { … }
/// ```
enum PushStatements {
    /// Each statement's text, as PostgresNIO names it in an error.
    static let texts: Set<String> = [
        Start.sql, LookUpRows.sql, RecordClient.sql, UpdateRows.sql, Finish.sql, Notify.sql,
    ]

    /// Whether `error` came from one of these statements (or
    /// ``PullStatements``') and may have come from preparing it: PostgresNIO
    /// then answers that error to every later use of the statement on the
    /// connection, so the connection must go. A serialization failure or a
    /// duplicate key comes from running one, never from preparing it.
    static func mayHaveFailedPreparing(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, let sql = error.query?.sql, texts.contains(sql) || PullStatements.texts.contains(sql)
        else { return false }
        return !["40001", "23505"].contains(error.serverInfo?[.sqlState] ?? "")
    }

    /// The client's last applied id, the horizon, the oldest transaction
    /// the snapshot (taken here) could not see, and, for the mutations past
    /// the client's last applied id, as many versions, in order, with the
    /// transaction's id (none when there are none): one round trip.
    ///
    /// The versions are taken after the snapshot, in the same statement, so
    /// they are larger than every version it can see. A push that goes no
    /// further (its history is lost) leaves a gap in the sequence, as a
    /// rolled-back push always has.
    struct Start: ClientStatement {
        static let name = "ferry_push_start"
        static let sql = """
            SELECT c.last, coalesce((SELECT horizon_version FROM ferry_meta), 0),
                pg_snapshot_xmin(pg_current_snapshot())::text::bigint,
                (SELECT array_agg(v ORDER BY v) FROM (
                    SELECT nextval('ferry_versions') AS v
                    FROM generate_series(1::int8, (SELECT count(*) FROM unnest($3::int8[]) AS m(id) WHERE m.id > c.last))) s),
                CASE WHEN EXISTS (SELECT 1 FROM unnest($3::int8[]) AS m(id) WHERE m.id > c.last)
                    THEN pg_current_xact_id()::text::bigint END
            FROM (SELECT coalesce((SELECT last_mutation_id FROM ferry_clients WHERE user_id = $1 AND client_id = $2), 0) AS last) c
            """
        typealias Row = (lastApplied: Int64, horizon: Int64, readable: Int64, versions: [Int64]?, xid: Int64?)
        var userID: String
        var clientID: String
        /// The push's mutation ids: those past the client's last applied id get a version each.
        var mutationIDs: [Int64]

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 3)
            bindings.append(userID)
            bindings.append(clientID)
            bindings.append(mutationIDs)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            let (last, horizon, readable, versions, xid) = try row.decode((Int64, Int64, Int64, [Int64]?, Int64?).self)
            return (last, horizon, readable, versions, xid)
        }
    }

    /// The rows of `keys` as stored: one primary-key probe per key.
    struct LookUpRows: PostgresPreparedStatement {
        static let name = "ferry_push_rows"
        static let sql = """
            SELECT r.scope, r.tbl, r.row_id, r.version, r.deleted, r.client_id, r.cells
            FROM unnest($1::text[], $2::text[], $3::text[]) AS k(scope, tbl, row_id)
            JOIN ferry_rows r ON r.scope = k.scope AND r.tbl = k.tbl AND r.row_id = k.row_id
            """
        typealias Row = (String, String, String, Int64, Bool, String, String)
        var keys: [RowKey]

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 3)
            bindings.append(keys.map(\.scope))
            bindings.append(keys.map(\.table))
            bindings.append(keys.map(\.rowID))
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// The client's last applied id and the transaction that moved it, with
    /// the digests of the mutations applied (``MutationDigest``) and the
    /// push's new rows, in the order given: one round trip.
    ///
    /// A row inserted here that is stored after all (another device made it
    /// since the push assumed it new, or a concurrent push of this client
    /// wrote it) fails the statement with a duplicate key, and the push is
    /// tried again, reading its rows.
    struct RecordClient: PushWrite {
        static let name = "ferry_push_client"
        static let sql = """
            WITH digests AS (
                INSERT INTO ferry_mutation_digests (user_id, client_id, first_mutation_id, last_mutation_id, version, digests)
                VALUES ($1, $2, $6, $3, $7, $8)
            ), inserted AS (
                INSERT INTO ferry_rows (scope, tbl, row_id, version, xid, deleted, client_id, changed_at, cells)
                SELECT u.scope, u.tbl, u.row_id, u.version, $4, u.deleted, u.client_id, $5, u.cells
                FROM unnest($9::text[], $10::text[], $11::text[], $12::int8[], $13::bool[], $14::text[], $15::text[])
                    AS u(scope, tbl, row_id, version, deleted, client_id, cells)
            )
            INSERT INTO ferry_clients (user_id, client_id, last_mutation_id, xid, first_notice_xid, last_push_at)
            VALUES ($1, $2, $3, $4, pg_snapshot_xmin(pg_current_snapshot())::text::bigint, $5)
            ON CONFLICT (user_id, client_id) DO UPDATE SET
                last_mutation_id = excluded.last_mutation_id, xid = excluded.xid, last_push_at = excluded.last_push_at
            """
        var userID: String
        var clientID: String
        var lastMutationID: Int64
        var xid: Int64
        var now: Int64
        /// The first mutation applied now: the digests are of it and those after, to `lastMutationID`.
        var firstMutationID: Int64
        /// The store's version after the push (for collecting the digests with the results).
        var version: Int64
        var digests: [MutationDigest]
        /// The rows the push makes, in key order (the order every push locks rows in).
        var inserted: RowColumns

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 15)
            bindings.append(userID)
            bindings.append(clientID)
            bindings.append(lastMutationID)
            bindings.append(xid)
            bindings.append(now)
            bindings.append(firstMutationID)
            bindings.append(version)
            bindings.append(ByteBuffer(bytes: MutationDigest.packed(digests)))
            inserted.appendColumns(to: &bindings)
            return bindings
        }
    }

    /// Stored rows, in the order given.
    struct UpdateRows: PushWrite {
        static let name = "ferry_push_update_rows"
        static let sql = """
            UPDATE ferry_rows r SET version = u.version, xid = $8, deleted = u.deleted, client_id = u.client_id,
                changed_at = $9, cells = u.cells, collected = false
            FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::bool[], $6::text[], $7::text[])
                AS u(scope, tbl, row_id, version, deleted, client_id, cells)
            WHERE r.scope = u.scope AND r.tbl = u.tbl AND r.row_id = u.row_id
            """
        var rows: RowColumns
        var xid: Int64
        var now: Int64

        func makeBindings() -> PostgresBindings { rows.bindings(xid: xid, now: now) }
    }

    /// What a push writes last, in one round trip: its results, as runs
    /// (``AppliedRun``) and one by one (as the JSON the push answered), and
    /// the notifications that tell every instance's listener of the commit
    /// (``ChangeNotice``), sent in order.
    struct Finish: PushWrite {
        static let name = "ferry_push_finish"
        static let sql = """
            WITH runs AS (
                INSERT INTO ferry_applied_runs (user_id, client_id, first_mutation_id, last_mutation_id, first_version, version, xid)
                SELECT $1, $2, u.first, u.last, u.first_version, $6, $7
                FROM unnest($3::int8[], $4::int8[], $5::int8[]) AS u(first, last, first_version)
            ), results AS (
                INSERT INTO ferry_results (user_id, client_id, mutation_id, version, xid, result)
                SELECT $1, $2, u.mutation_id, $6, $7, u.result
                FROM unnest($8::int8[], $9::text[]) AS u(mutation_id, result)
            )
            SELECT pg_notify($10, n.payload) FROM unnest($11::text[]) WITH ORDINALITY AS n(payload, i) ORDER BY n.i
            """
        var userID: String
        var clientID: String
        var runs: [AppliedRun]
        var resultIDs: [Int64]
        var results: [String]
        var version: Int64
        var xid: Int64
        var payloads: [String]

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 11)
            bindings.append(userID)
            bindings.append(clientID)
            bindings.append(runs.map(\.firstMutationID))
            bindings.append(runs.map(\.lastMutationID))
            bindings.append(runs.map(\.firstVersion))
            bindings.append(version)
            bindings.append(xid)
            bindings.append(resultIDs)
            bindings.append(results)
            bindings.append(PostgresSchema.channel)
            bindings.append(payloads)
            return bindings
        }
    }

    /// Tells every instance's listener of a commit (``ChangeNotice``).
    struct Notify: PushWrite {
        static let name = "ferry_push_notify"
        static let sql = "SELECT pg_notify($1, $2)"
        var payload: String

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(PostgresSchema.channel)
            bindings.append(payload)
            return bindings
        }
    }
}

/// A statement of one client, bound by its user and its id (`$1`, `$2`).
protocol ClientStatement: PostgresPreparedStatement {
    var userID: String { get }
    var clientID: String { get }
}

extension ClientStatement {
    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(userID)
        bindings.append(clientID)
        return bindings
    }
}

/// A push statement whose rows, if any, say nothing.
protocol PushWrite: PostgresPreparedStatement where Row == () {}

extension PushWrite {
    func decodeRow(_ row: PostgresRow) throws {}
}

extension PostgresConnection {
    /// Runs a prepared statement whose rows, if any, say nothing, reading
    /// them through. (PostgresNIO's `execute` that answers the command tag
    /// traps on a statement that answered without rows.)
    func run<Statement: PostgresPreparedStatement>(_ statement: Statement, logger: Logger) async throws where Statement.Row == () {
        for try await _ in try await execute(statement, logger: logger) {}
    }
}

extension RowColumns {
    /// The seven columns, in the order ``PushStatements/RecordClient`` and
    /// ``PushStatements/UpdateRows`` unnest them.
    fileprivate func appendColumns(to bindings: inout PostgresBindings) {
        bindings.append(scopes)
        bindings.append(tables)
        bindings.append(rowIDs)
        bindings.append(versions)
        bindings.append(deleted)
        bindings.append(clientIDs)
        bindings.append(cells)
    }

    /// The seven columns, then the transaction id and the time: the
    /// parameters of ``PushStatements/UpdateRows``.
    fileprivate func bindings(xid: Int64, now: Int64) -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 9)
        appendColumns(to: &bindings)
        bindings.append(xid)
        bindings.append(now)
        return bindings
    }
}
