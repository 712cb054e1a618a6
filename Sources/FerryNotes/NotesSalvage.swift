import Foundation
import GRDB

/// Reading the notes out of a damaged database file, one at a time, for
/// `export` when the file can no longer be opened or scanned whole.
///
/// The file and its write-ahead log are copied aside first and the copy
/// opened, so the newest writes (still in the log) are read and the damaged
/// file itself is never written. A scan stops at the first damaged page, so
/// the notes are walked by row number instead: each step asks for the next
/// row number after the last one read, and a step that meets a damaged page
/// is retried one number further on until the walk is past it.
///
/// ```swift
/// let salvage = try NotesLibrary.salvage(path: "notes.sqlite")
/// print("\(salvage.notes) notes saved; at most \(salvage.lostAtMost) lost")
/// ```
extension NotesLibrary {
    public struct Salvage: Sendable {
        /// The notes read, as JSON Lines (as `export --out -` prints them).
        public var lines: Data
        public var notes: Int
        /// Row numbers the walk could not read past, and notes found but not
        /// readable: at most this many notes were lost (0: none).
        public var lostAtMost: Int
        /// The walk gave up on a damaged stretch it could not get past:
        /// notes after it, if any, were not reached.
        public var stoppedEarly: Bool
    }

    /// The most row numbers in a row the walk tries to step past a damaged page.
    static let salvageStepLimit = 1_000_000

    /// Every note that can still be read from the file at `path` (with its
    /// log), which is left untouched.
    ///
    /// - throws: the SQLite error when not even the list of tables reads.
    public static func salvage(path: String) throws -> Salvage {
        let folder = FileManager.default.temporaryDirectory.appending(path: "ferry-notes-salvage-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: folder) }
        let copy = folder.appending(path: "notes.sqlite").path
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        if FileManager.default.fileExists(atPath: path + "-wal") { try FileManager.default.copyItem(atPath: path + "-wal", toPath: copy + "-wal") }
        let queue = try DatabaseQueue(path: copy)
        defer { try? queue.close() }
        // No transaction around it: a statement that meets a damaged page must not fail the ones after it.
        return try queue.inDatabase { db in
            let notebooks =
                (try? Dictionary(
                    Row.fetchAll(db, sql: "SELECT id, name FROM notebook").map { ($0["id"] as String, $0["name"] as String) },
                    uniquingKeysWith: { first, _ in first })) ?? [:]
            let nextRow = try db.makeStatement(sql: "SELECT rowid FROM note WHERE rowid > ? ORDER BY rowid LIMIT 1")
            let readRow = try db.makeStatement(sql: "SELECT * FROM note WHERE rowid = ?")
            var exported: [Exported] = []
            var lost = 0
            var after: Int64 = 0
            var steps = 0
            var stoppedEarly = false
            while true {
                let next: Int64
                do {
                    guard let found = try Int64.fetchOne(nextRow, arguments: [after]) else { break }
                    next = found
                    steps = 0
                } catch {
                    // A damaged page on the way: step past it, one row number at a time.
                    steps += 1
                    lost += 1
                    guard steps < salvageStepLimit, after < Int64.max else {
                        stoppedEarly = true
                        break
                    }
                    after += 1
                    continue
                }
                after = next
                do {
                    guard let row = try Row.fetchOne(readRow, arguments: [next]) else { continue }
                    let note = try Note(row: row)
                    exported.append(
                        Exported(
                            id: note.id, title: note.title, body: note.body, category: note.category, tags: note.tags,
                            notebook: note.notebookID.flatMap { notebooks[$0] }, author: note.author, createdAt: note.createdAt,
                            updatedAt: note.updatedAt, deletedAt: note.deletedAt))
                } catch {
                    lost += 1
                }
                if next == Int64.max { break }
            }
            exported.sort { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
            return Salvage(lines: try jsonLines(exported), notes: exported.count, lostAtMost: lost, stoppedEarly: stoppedEarly)
        }
    }
}
