import PostgresNIO

/// The statement every pull starts with, prepared once per connection under
/// a fixed name, as ``PushStatements``' are: a live stream's page is a pull,
/// so each write to a followed scope runs it once per instance.
///
/// ```swift
/// for try await head in try await connection.execute(PullStatements.Head(userID: "alice", clientID: "phone"), logger: logger) { … }
/// ```
enum PullStatements {
    /// Each statement's text, as PostgresNIO names it in an error.
    static let texts: Set<String> = [Head.sql]

    /// In one round trip, from the snapshot (taken here): the readable
    /// horizon (the oldest transaction the snapshot could not see), the
    /// store's history horizon, the client's last applied id as of the
    /// readable horizon, whether the client ever pushed, and where its
    /// notices start (`NULL`: the beginning).
    ///
    /// The last applied id agrees with the rows the page can return: a
    /// push that committed but is not below the readable horizon yet does
    /// not count; its results and runs below it do.
    struct Head: ClientStatement {
        static let name = "ferry_pull_head"
        static let sql = """
            SELECT h.readable, m.horizon_xid, m.horizon_seq,
                CASE WHEN c.user_id IS NULL THEN 0
                    WHEN c.xid < h.readable THEN c.last_mutation_id
                    ELSE COALESCE(GREATEST(
                        (SELECT max(r.mutation_id) FROM ferry_results r
                            WHERE r.user_id = c.user_id AND r.client_id = c.client_id AND r.xid < h.readable),
                        (SELECT a.last_mutation_id FROM ferry_applied_runs a
                            WHERE a.user_id = c.user_id AND a.client_id = c.client_id AND a.xid < h.readable
                            ORDER BY a.first_mutation_id DESC LIMIT 1)), 0) END,
                c.user_id IS NOT NULL, c.first_notice_xid
            FROM (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS readable) h
            CROSS JOIN ferry_meta m
            LEFT JOIN ferry_clients c ON c.user_id = $1 AND c.client_id = $2
            """
        typealias Row = (readable: Int64, horizonXID: Int64, horizonSeq: Int64, lastApplied: Int64, pushed: Bool, firstNotice: Int64?)
        var userID: String
        var clientID: String

        func decodeRow(_ row: PostgresRow) throws -> Row {
            let (readable, horizonXID, horizonSeq, lastApplied, pushed, firstNotice) = try row.decode((Int64, Int64, Int64, Int64, Bool, Int64?).self)
            return (readable, horizonXID, horizonSeq, lastApplied, pushed, firstNotice)
        }
    }
}
