import Foundation
import GRDB

/// Reading the notes out of a damaged database file, one at a time, for
/// `export` when the file can no longer be opened or scanned whole.
///
/// A scan stops at the first damaged page; a note looked up by its row
/// number only reads the pages on its own path, so every note whose pages
/// survived is found. Notebook names come along when their table still
/// reads.
///
/// ```swift
/// let salvage = try NotesLibrary.salvage(path: "notes.sqlite.damaged")
/// print("\(salvage.lines.count) bytes, \(salvage.damagedRecords) records unreadable")
/// ```
extension NotesLibrary {
    public struct Salvage: Sendable {
        /// The notes read, as JSON Lines (as `export --out -` prints them).
        public var lines: Data
        public var notes: Int
        /// Row numbers whose lookup failed on a damaged page.
        public var damagedRecords: Int
    }

    /// Every note that can still be read from the file at `path`, which is
    /// opened read-only and never written.
    ///
    /// - throws: the SQLite error when not even the list of tables reads.
    public static func salvage(path: String) throws -> Salvage {
        var grdb = Configuration()
        grdb.readonly = true
        var uri = URLComponents()
        uri.scheme = "file"
        uri.path = URL(filePath: path).standardizedFileURL.path
        uri.queryItems = [URLQueryItem(name: "immutable", value: "1")]
        let queue = try DatabaseQueue(path: uri.string ?? path, configuration: grdb)
        // No transaction around it: a statement that meets a damaged page must not fail the ones after it.
        return try queue.inDatabase { db in
            let notebooks =
                (try? Dictionary(
                    Row.fetchAll(db, sql: "SELECT id, name FROM notebook").map { ($0["id"] as String, $0["name"] as String) },
                    uniquingKeysWith: { first, _ in first })) ?? [:]
            // The highest row number, from the table itself or its search keys; probed past it a while.
            let highest =
                [
                    try? Int64.fetchOne(db, sql: "SELECT max(rowid) FROM note"),
                    try? Int64.fetchOne(db, sql: "SELECT max(key) FROM note_key"),
                    try? Int64.fetchOne(db, sql: "SELECT count(*) FROM note_key"),
                ].compactMap { $0 ?? nil }.max() ?? 0
            let statement = try db.makeStatement(sql: "SELECT * FROM note WHERE rowid = ?")
            var exported: [Exported] = []
            var damaged = 0
            var rowID: Int64 = 1
            var lastFound: Int64 = 0
            while rowID <= highest || rowID - lastFound <= 10_000 {
                defer { rowID += 1 }
                do {
                    guard let row = try Row.fetchOne(statement, arguments: [rowID]) else { continue }
                    let note = try Note(row: row)
                    lastFound = rowID
                    exported.append(
                        Exported(
                            id: note.id, title: note.title, body: note.body, category: note.category, tags: note.tags,
                            notebook: note.notebookID.flatMap { notebooks[$0] }, author: note.author, createdAt: note.createdAt,
                            updatedAt: note.updatedAt, deletedAt: note.deletedAt))
                } catch {
                    if rowID <= max(highest, lastFound) { damaged += 1 }
                }
            }
            exported.sort { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
            return Salvage(lines: try jsonLines(exported), notes: exported.count, damagedRecords: damaged)
        }
    }
}
