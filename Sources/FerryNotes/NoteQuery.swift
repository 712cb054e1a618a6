import Foundation
import GRDB

/// A list query (`ls`) as SQL, decided without a database: which filter,
/// which index serves it, and where a page starts. Every filter reads its
/// own index in order, so a page of `limit` notes reads about `limit` rows
/// (checked with `EXPLAIN QUERY PLAN` and `sqlite3_stmt_status` in tests
/// and `ferry-bench notes`).
///
/// ```swift
/// let query = NoteQuery(filter: .tag("work"), limit: 20, after: cursor)
/// let (sql, arguments) = query.sql()
/// ```
public struct NoteQuery: Sendable, Hashable {
    public enum Filter: Sendable, Hashable {
        case all
        case deleted
        case category(String)
        case notebook(id: String)
        case tag(String)
    }

    public var filter: Filter
    public var limit: Int
    /// Where the page starts: the cursor of the previous page's last note.
    public var after: NoteCursor?
    /// Only notes changed at or after this time (milliseconds since 1970).
    public var since: Int64?
    /// Only notes changed before this time (milliseconds since 1970).
    public var until: Int64?

    public init(filter: Filter = .all, limit: Int = 50, after: NoteCursor? = nil, since: Int64? = nil, until: Int64? = nil) {
        self.filter = filter
        self.limit = limit
        self.after = after
        self.since = since
        self.until = until
    }

    /// The statement and its arguments: notes newest first, then by id.
    public func sql() -> (String, StatementArguments) {
        var arguments: StatementArguments = []
        var conditions: [String] = []
        let from: String
        let order: String
        switch filter {
        case .all:
            from = "note INDEXED BY note_live"
            conditions.append("note.deleted_at IS NULL")
            order = "note.updated_at DESC, note.id DESC"
        case .deleted:
            from = "note INDEXED BY note_deleted"
            conditions.append("note.deleted_at IS NOT NULL")
            order = "note.updated_at DESC, note.id DESC"
        case .category(let name):
            from = "note INDEXED BY note_by_category"
            conditions.append("note.deleted_at IS NULL AND note.category = ?")
            arguments += [name]
            order = "note.updated_at DESC, note.id DESC"
        case .notebook(let id):
            from = "note INDEXED BY note_by_notebook"
            conditions.append("note.deleted_at IS NULL AND note.notebook_id = ?")
            arguments += [id]
            order = "note.updated_at DESC, note.id DESC"
        case .tag(let tag):
            // The tag's rows in order, each joined to its note by primary key.
            // Times bound the same index range the order walks: the scan stops at `since`.
            var keyset = after.map { _ in " AND (t.updated_at, t.note_id) < (?, ?)" } ?? ""
            var tagArguments: StatementArguments = [tag]
            if let after { tagArguments += [after.updatedAt, after.id] }
            if let since {
                keyset += " AND t.updated_at >= ?"
                tagArguments += [since]
            }
            if let until {
                keyset += " AND t.updated_at < ?"
                tagArguments += [until]
            }
            tagArguments += [limit]
            return (
                """
                SELECT note.* FROM note_tag t JOIN note ON note.id = t.note_id
                WHERE t.tag = ?\(keyset)
                ORDER BY t.updated_at DESC, t.note_id DESC LIMIT ?
                """, tagArguments
            )
        }
        if let after {
            conditions.append("(note.updated_at, note.id) < (?, ?)")
            arguments += [after.updatedAt, after.id]
        }
        if let since {
            conditions.append("note.updated_at >= ?")
            arguments += [since]
        }
        if let until {
            conditions.append("note.updated_at < ?")
            arguments += [until]
        }
        arguments += [limit]
        return ("SELECT note.* FROM \(from) WHERE \(conditions.joined(separator: " AND ")) ORDER BY \(order) LIMIT ?", arguments)
    }
}

/// Where a page of notes ends: the last note's time and id, as text a user
/// passes back with `--after`.
///
/// ```swift
/// let cursor = NoteCursor(note)
/// NoteCursor(text: cursor.text) == cursor   // true
/// ```
public struct NoteCursor: Sendable, Hashable {
    public var updatedAt: Int64
    public var id: String

    public init(updatedAt: Int64, id: String) {
        self.updatedAt = updatedAt
        self.id = id
    }

    public init(_ note: Note) {
        self.init(updatedAt: note.updatedAt, id: note.id)
    }

    /// `<updated_at>.<id>`.
    public var text: String { "\(updatedAt).\(id)" }

    public init?(text: String) {
        guard let dot = text.firstIndex(of: "."), let time = Int64(text[..<dot]) else { return nil }
        let id = String(text[text.index(after: dot)...])
        guard !id.isEmpty else { return nil }
        self.init(updatedAt: time, id: id)
    }
}

/// A search (`search`) as SQL: every word of the text as a quoted prefix,
/// all required, through FTS5 (diacritics folded by its tokenizer), best
/// first by BM25 with the title weighted most. Only live notes are in the
/// index, so FTS5 picks the best `limit` itself before any join.
///
/// ```swift
/// let (sql, arguments) = NoteSearch("naive caf", limit: 20)!.sql()
/// ```
public struct NoteSearch: Sendable, Hashable {
    /// The FTS5 query: `"naive"* "caf"*`.
    public var match: String
    /// The words, each matched as a token prefix: `["naive", "caf"]`.
    public var words: [String]
    public var limit: Int
    public var highlight: (String, String)

    /// `nil` when the text has no word to search for.
    public init?(_ text: String, limit: Int = 20, highlight: (String, String) = ("[", "]")) {
        let words = text.split { !$0.isLetter && !$0.isNumber }.map(String.init)
        guard !words.isEmpty else { return nil }
        self.words = words
        match = words.map { "\"\($0)\"*" }.joined(separator: " ")
        self.limit = limit
        self.highlight = highlight
    }

    /// The hits, best first (their snippets are built by ``SearchSnippet``:
    /// FTS5's `snippet()` and `highlight()` are quadratic in a note that
    /// matches often).
    public func sql() -> (String, StatementArguments) {
        (
            """
            SELECT note.*, hit.rank FROM (
                SELECT rowid, rank FROM note_fts WHERE note_fts MATCH ? ORDER BY rank LIMIT ?
            ) hit
            JOIN note_key ON note_key.key = hit.rowid JOIN note ON note.id = note_key.note_id
            ORDER BY hit.rank
            """, [match, limit]
        )
    }

    public static func == (lhs: NoteSearch, rhs: NoteSearch) -> Bool {
        lhs.match == rhs.match && lhs.limit == rhs.limit && lhs.highlight == rhs.highlight
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(match)
        hasher.combine(limit)
    }
}
