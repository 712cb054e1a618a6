import GRDB

/// One row of `ferry_cursors`: where a followed scope's pull stands.
///
/// ```swift
/// var record = try ScopeCursorRecord.fetchOne(db, key: scope) ?? ScopeCursorRecord(scope: scope)
/// record.cursor = page.cursor
/// try record.save(db)
/// ```
struct ScopeCursorRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "ferry_cursors"

    var scope: String
    /// The row cursor of the last page applied; `nil` starts from scratch.
    var cursor: String?
    /// A from-scratch fetch after a reset, finished by a sweep.
    var refetching: Bool = false
    /// With `refetching`: the server lost the history the cursor came from,
    /// so the fetch ends by sending back what it lacks instead of a sweep.
    var recovering: Bool = false
    /// Apart from `cursor`: a refetch after a reset does not deliver notices again.
    var noticeCursor: String?
    /// The cursor held before the scope was started over, until a page of
    /// the refetch is applied (``PullRequest/ScopeCursor/previous``).
    var previousCursor: String?

    enum CodingKeys: String, CodingKey {
        case scope, cursor, refetching, recovering, noticeCursor = "notice_cursor", previousCursor = "previous_cursor"
    }

    enum Columns {
        static let scope = Column(CodingKeys.scope)
        static let cursor = Column(CodingKeys.cursor)
        static let refetching = Column(CodingKeys.refetching)
        static let recovering = Column(CodingKeys.recovering)
        static let noticeCursor = Column(CodingKeys.noticeCursor)
        static let previousCursor = Column(CodingKeys.previousCursor)
    }

    /// The record of `scope`, or a new one that starts from scratch.
    static func find(_ scope: String, _ db: Database) throws -> ScopeCursorRecord {
        // A cached statement: every page and live page reads its scope's row (a request compiles its SQL each time).
        try fetchOne(db.cachedStatement(sql: "SELECT * FROM ferry_cursors WHERE scope = ?"), arguments: [scope])
            ?? ScopeCursorRecord(scope: scope)
    }

    /// Writes the record in one statement, cached: every page and live page
    /// saves its scope's row (``save(_:)`` encodes it through `Codable`
    /// and tries an update before an insert).
    func store(_ db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO ferry_cursors(scope, cursor, refetching, recovering, notice_cursor, previous_cursor)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(scope) DO UPDATE SET cursor = excluded.cursor, refetching = excluded.refetching,
                recovering = excluded.recovering, notice_cursor = excluded.notice_cursor, previous_cursor = excluded.previous_cursor
                """
        ).execute(arguments: [scope, cursor, refetching, recovering, noticeCursor, previousCursor])
    }

    /// Starts `scope` (or every scope) over from scratch, as after a reset:
    /// its rows come again and a sweep at the end removes the ones that did not.
    ///
    /// - Parameter keepingPrevious: the cursor held so far goes with the
    ///   refetch as ``PullRequest/ScopeCursor/previous`` (a server that lost
    ///   its history then says so); `false` for a cursor the server refused.
    static func startOver(_ scope: String?, keepingPrevious: Bool = true, _ db: Database) throws {
        let request = scope.map { ScopeCursorRecord.filter(key: $0) } ?? ScopeCursorRecord.all()
        // A recovery under way stays one: starting over never turns it into a sweep.
        try request.updateAll(
            db, Columns.previousCursor.set(to: keepingPrevious ? coalesce([Columns.cursor, Columns.previousCursor]) : nil),
            Columns.cursor.set(to: nil), Columns.refetching.set(to: true))
        try db.execute(sql: "DELETE FROM ferry_refetch_seen WHERE ? IS NULL OR scope = ?", arguments: [scope, scope])
    }
}
