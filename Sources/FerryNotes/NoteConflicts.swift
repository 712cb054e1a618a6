import Ferry
import FerryProtocol
import Foundation

/// Conflicts on notes as the app shows them: which note, which field, mine
/// against theirs as a line diff, and the three ways to settle one.
///
/// ```swift
/// for conflict in try notes.conflicts() { print(conflict.diff.joined(separator: "\n")) }
/// try notes.resolve(conflictID, .mine)
/// ```
extension NotesLibrary {
    public struct ConflictView: Sendable, Hashable, Encodable {
        public var id: Int64
        /// `note`, or the other table the conflict is on (`category`, `notebook`).
        public var table: String
        /// The row's id (a note's, for a note).
        public var noteID: String
        /// The note's title, or the table and the row's name.
        public var title: String
        /// The field, or `nil` for the whole note (an edit lost to a delete).
        public var field: String?
        public var kind: String
        public var mine: String?
        public var theirs: String?
        public var overriddenBy: String?
        /// `-` mine, `+` theirs.
        public var diff: [String]
    }

    public enum Choice: Sendable, Hashable {
        case mine, theirs
        /// The field's value as the user wrote it.
        case edited(String)
    }

    /// Every conflict, oldest first: on notes, and on notebooks and
    /// categories (named by their row).
    public func conflicts() throws -> [ConflictView] {
        let conflicts = try database.conflicts.list()
        let numbers = try number(conflicts)
        let titles = try database.read { db in
            var titles: [String: String] = [:]
            for id in Set(conflicts.filter { $0.table == "note" }.map(\.rowID)) {
                titles[id] = try String.fetchOne(db, sql: "SELECT title FROM note WHERE id = ?", arguments: [id])
            }
            return titles
        }
        return conflicts.map { conflict in
            let text = { (value: ColumnValue) in conflict.column == "tags" ? Note.tags(from: Self.text(value)).joined(separator: ", ") : Self.text(value) }
            let mine = conflict.mine.map(text), theirs = conflict.theirs.map(text)
            let title =
                conflict.table == "note"
                ? titles[conflict.rowID] ?? Self.text(conflict.serverRow?.values["title"] ?? .null)
                : "\(conflict.table) \(Self.text(conflict.serverRow?.values["name"] ?? .text(conflict.rowID)))"
            return ConflictView(
                id: numbers[conflict.id] ?? conflict.id, table: conflict.table, noteID: conflict.rowID, title: title, field: conflict.column,
                kind: conflict.kind.rawValue, mine: mine, theirs: theirs, overriddenBy: conflict.overriddenBy,
                diff: LineDiff.lines(from: mine ?? "(deleted)", to: theirs ?? "(deleted)"))
        }
    }

    /// The number shown for each conflict, by the library's conflict id:
    /// kept while the conflict lives, never given to another; numbers of
    /// conflicts gone are forgotten.
    private func number(_ conflicts: [SyncConflict]) throws -> [Int64: Int64] {
        try database.write { db in
            var numbers: [Int64: Int64] = [:]
            var live: Set<Int64> = []
            for conflict in conflicts {
                let detected = conflict.detectedAt.timeIntervalSince1970
                try db.execute(
                    sql: "INSERT OR IGNORE INTO notes_conflict_number(conflict_id, detected_at) VALUES (?, ?)",
                    arguments: [conflict.id, detected])
                let number = try Int64.fetchOne(
                    db, sql: "SELECT number FROM notes_conflict_number WHERE conflict_id = ? AND detected_at = ?",
                    arguments: [conflict.id, detected])
                if let number {
                    numbers[conflict.id] = number
                    live.insert(number)
                }
            }
            for number in try Int64.fetchAll(db, sql: "SELECT number FROM notes_conflict_number") where !live.contains(number) {
                try db.execute(sql: "DELETE FROM notes_conflict_number WHERE number = ?", arguments: [number])
            }
            return numbers
        }
    }

    /// Settles every conflict on one note (any unique prefix of its id).
    public func resolveAll(onNote prefix: String, _ choice: Choice) throws -> Int {
        let id = try show(prefix).id
        let ids = try database.conflicts.list().filter { $0.table == "note" && $0.rowID == id }
        guard !ids.isEmpty else { throw NotesError(.notFound, "note \(prefix) has no conflict") }
        for conflict in ids { try resolve(conflict, choice) }
        return ids.count
    }

    /// Settles conflict `number`, as `conflicts` shows it.
    ///
    /// - throws: ``NotesError`` `.notFound` for a conflict that is not there.
    public func resolve(_ number: Int64, _ choice: Choice) throws {
        let conflicts = try database.conflicts.list()
        let numbers = try self.number(conflicts)
        guard let conflict = conflicts.first(where: { numbers[$0.id] == number }) else {
            throw NotesError(.notFound, "no conflict \(number); `ferry-notes conflicts` lists them")
        }
        try resolve(conflict, choice, shownAs: number)
    }

    private func resolve(_ conflict: SyncConflict, _ choice: Choice, shownAs id: Int64? = nil) throws {
        let id = id ?? conflict.id
        let now = ColumnValue.integer(clock())
        switch (choice, conflict.column) {
        // A field's value chosen: written with a new time, so lists and `watch` see the change.
        case (.mine, let column?) where conflict.table == "note" && conflict.mine != nil:
            try database.conflicts.resolve(conflict, with: .merged([column: conflict.mine!, "updated_at": now]))
        case (.theirs, let column?) where conflict.table == "note" && conflict.theirs != nil:
            try database.conflicts.resolve(conflict, with: .merged([column: conflict.theirs!, "updated_at": now]))
        case (.mine, _): try database.conflicts.resolve(conflict, with: .mine)
        case (.theirs, _): try database.conflicts.resolve(conflict, with: .theirs)
        case (.edited(let text), let column):
            guard let column else {
                throw NotesError(.failure, "conflict \(id) is about the whole row; resolve it with --mine or --theirs")
            }
            let value: ColumnValue =
                column == "tags"
                ? .text(Note.tagsText(text.split(separator: ",").map(String.init)))
                : .text(text)
            try database.conflicts.resolve(conflict, with: .merged(conflict.table == "note" ? [column: value, "updated_at": now] : [column: value]))
        }
    }

    /// Settles what needs no one's decision, after each sync: conflicts on
    /// `updated_at` (bookkeeping, not anyone's words: the later time is
    /// kept) and reports that this device's value won (the writer it
    /// overwrote is told, with their value, on their next sync).
    func settleBookkeeping() throws {
        for conflict in try database.conflicts.list()
        where conflict.table == "note" && conflict.resolution == .keptLocal
            && conflict.overriddenBy == nil && conflict.column != "updated_at"
        {
            try database.conflicts.dismiss(conflict)
        }
        for conflict in try database.conflicts.list() where conflict.table == "note" && conflict.column == "updated_at" {
            if conflict.resolution == .unresolved {
                let times = [conflict.mine, conflict.theirs].compactMap { value -> Int64? in
                    if case .integer(let time)? = value { time } else { nil }
                }
                try database.conflicts.resolve(conflict, with: .merged(["updated_at": .integer(times.max() ?? clock())]))
            } else {
                try database.conflicts.dismiss(conflict)
            }
        }
    }

    /// A column value as text.
    static func text(_ value: ColumnValue) -> String {
        switch value {
        case .null: ""
        case .integer(let number): String(number)
        case .real(let number): String(number)
        case .text(let text): text
        case .blob(let data): "<\(data.count) bytes>"
        }
    }
}
