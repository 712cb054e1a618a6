import FerryProtocol
import GRDB

/// Where each followed scope's pull stands: the cursor and notice cursor of
/// the last page applied (``PageApplier`` stores them with the page), as the
/// engine sends them in the next pull.
///
/// ```swift
/// var cursors = try await ScopeCursors.load(database)
/// let request = PullRequest(clientID: id, scopes: scopes.map { cursors.request(for: $0) })
/// ```
struct ScopeCursors: Sendable {
    var rows: [String: String] = [:]
    var notices: [String: String] = [:]
    /// Cursors held before a scope was started over, until its refetch moves on.
    var previous: [String: String] = [:]

    static func load(_ database: FerryDatabase) async throws -> ScopeCursors {
        try await database.read(read)
    }

    /// The cursors, read in a transaction the caller holds (the push reads
    /// them with its batch).
    static func read(_ db: Database) throws -> ScopeCursors {
        var cursors = ScopeCursors()
        for record in try ScopeCursorRecord.fetchAll(db.cachedStatement(sql: "SELECT * FROM ferry_cursors")) {
            cursors.rows[record.scope] = record.cursor
            cursors.notices[record.scope] = record.noticeCursor
            cursors.previous[record.scope] = record.previousCursor
        }
        return cursors
    }

    func request(for scope: String) -> PullRequest.ScopeCursor {
        PullRequest.ScopeCursor(
            scope: scope, cursor: rows[scope], notices: notices[scope],
            previous: rows[scope] == nil ? previous[scope] : nil)
    }

    /// A cursor the device holds, for a push to name the history its edits
    /// were made on (``PushRequest/seen``): the first of `scopes` that has one.
    func seen(among scopes: [String]) -> PushRequest.Seen? {
        for scope in scopes {
            if let cursor = rows[scope] ?? previous[scope] { return PushRequest.Seen(scope: scope, cursor: cursor) }
        }
        return nil
    }

    /// After a page was applied.
    mutating func advance(_ page: PullPage) {
        rows[page.scope] = page.cursor
        previous[page.scope] = nil
        if let noticeCursor = page.noticeCursor { notices[page.scope] = noticeCursor }
    }

    /// Starts the scope over, as after a reset; its notice cursor stays, so
    /// no notice is delivered twice.
    mutating func resetRows(of scope: String, in database: FerryDatabase) async throws {
        try await database.write { db in
            try ScopeCursorRecord.startOver(scope, keepingPrevious: false, db)
        }
        previous[scope] = nil
        rows[scope] = nil
    }

    /// Starts the scope over in memory, its cursor kept as the previous one,
    /// as `ScopeCursorRecord.startOver` does in the database.
    mutating func startOver(_ scope: String) {
        previous[scope] = rows[scope] ?? previous[scope]
        rows[scope] = nil
    }

    /// Notices start over (stored ones are not stored twice).
    mutating func resetNotices(of scope: String, in database: FerryDatabase) async throws {
        try await database.write { db in
            try ScopeCursorRecord.filter(key: scope).updateAll(db, ScopeCursorRecord.Columns.noticeCursor.set(to: nil))
        }
        notices[scope] = nil
    }
}
