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

    static func load(_ database: FerryDatabase) async throws -> ScopeCursors {
        try await database.read { db in
            var cursors = ScopeCursors()
            for row in try Row.fetchAll(db, sql: "SELECT scope, cursor, notice_cursor FROM ferry_cursors") {
                cursors.rows[row["scope"]] = row["cursor"]
                cursors.notices[row["scope"]] = row["notice_cursor"]
            }
            return cursors
        }
    }

    func request(for scope: String) -> PullRequest.ScopeCursor {
        PullRequest.ScopeCursor(scope: scope, cursor: rows[scope], notices: notices[scope])
    }

    /// After a page was applied.
    mutating func advance(_ page: PullPage) {
        rows[page.scope] = page.cursor
        if let noticeCursor = page.noticeCursor { notices[page.scope] = noticeCursor }
    }

    /// Starts the scope over, as after a reset; its notice cursor stays, so
    /// no notice is delivered twice.
    mutating func resetRows(of scope: String, in database: FerryDatabase) async throws {
        try await database.write { db in
            try db.execute(sql: "UPDATE ferry_cursors SET cursor = NULL, refetching = 1 WHERE scope = ?", arguments: [scope])
            try db.execute(sql: "DELETE FROM ferry_refetch_seen WHERE scope = ?", arguments: [scope])
        }
        rows[scope] = nil
    }

    /// Notices start over (stored ones are not stored twice).
    mutating func resetNotices(of scope: String, in database: FerryDatabase) async throws {
        try await database.write { db in
            try db.execute(sql: "UPDATE ferry_cursors SET notice_cursor = NULL WHERE scope = ?", arguments: [scope])
        }
        notices[scope] = nil
    }
}
