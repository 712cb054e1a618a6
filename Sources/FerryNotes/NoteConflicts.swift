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
        public var noteID: String
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

    /// Every conflict on notes, oldest first.
    public func conflicts() throws -> [ConflictView] {
        let notes = try database.read { db in
            Dictionary(try Note.fetchAll(db).map { ($0.id, $0.title) }, uniquingKeysWith: { first, _ in first })
        }
        return try database.conflicts.list().filter { $0.table == "note" }.map { conflict in
            let mine = conflict.mine.map(Self.text), theirs = conflict.theirs.map(Self.text)
            return ConflictView(id: conflict.id, noteID: conflict.rowID,
                                title: notes[conflict.rowID] ?? Self.text(conflict.serverRow?.values["title"] ?? .null),
                                field: conflict.column, kind: conflict.kind.rawValue, mine: mine, theirs: theirs,
                                overriddenBy: conflict.overriddenBy,
                                diff: LineDiff.lines(from: mine ?? "(deleted)", to: theirs ?? "(deleted)"))
        }
    }

    /// Settles conflict `id`.
    ///
    /// - throws: ``NotesError`` `.notFound` for a conflict that is not there.
    public func resolve(_ id: Int64, _ choice: Choice) throws {
        guard let conflict = try database.conflicts.list().first(where: { $0.id == id }) else {
            throw NotesError(.notFound, "no conflict \(id); `ferry-notes conflicts` lists them")
        }
        switch choice {
        case .mine: try database.conflicts.resolve(conflict, with: .mine)
        case .theirs: try database.conflicts.resolve(conflict, with: .theirs)
        case .edited(let text):
            guard let column = conflict.column else {
                throw NotesError(.usage, "conflict \(id) is about the whole note; resolve it with --mine or --theirs")
            }
            let value: ColumnValue = column == "tags"
                ? .text(Note.tagsText(text.split(separator: ",").map(String.init)))
                : .text(text)
            try database.conflicts.resolve(conflict, with: .merged([column: value, "updated_at": .integer(clock())]))
        }
    }

    /// Settles what needs no one's decision, after each sync: conflicts on
    /// `updated_at` (bookkeeping, not anyone's words: the later time is
    /// kept) and reports that this device's value won (the writer it
    /// overwrote is told, with their value, on their next sync).
    func settleBookkeeping() throws {
        for conflict in try database.conflicts.list() where conflict.table == "note" && conflict.resolution == .keptLocal
            && conflict.overriddenBy == nil && conflict.column != "updated_at" {
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
