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
    /// The order of the list: by last change (the default, newest first),
    /// by creation (newest first), or by title (A to Z, case ignored).
    public var order: NoteOrder = .updated
    /// The order turned around (oldest first; Z to A).
    public var reversed = false
    public var limit: Int
    /// Where the page starts: the cursor of the previous page's last note.
    public var after: NoteCursor?
    /// Only notes changed at or after this time (milliseconds since 1970).
    public var since: Int64?
    /// Only notes changed before this time (milliseconds since 1970).
    public var until: Int64?

    public init(
        filter: Filter = .all, order: NoteOrder = .updated, reversed: Bool = false, limit: Int = 50, after: NoteCursor? = nil,
        since: Int64? = nil, until: Int64? = nil
    ) {
        self.filter = filter
        self.order = order
        self.reversed = reversed
        self.limit = limit
        self.after = after
        self.since = since
        self.until = until
    }

    /// The statement and its arguments: notes in `order`, then by id.
    public func sql() -> (String, StatementArguments) {
        guard order == .updated, !reversed else { return orderedSQL() }
        let selection = self.selection
        guard case .tag(let tag) = filter else {
            // Each filter walks its own index in the order it lists.
            var conditions = [selection.condition]
            var arguments = selection.arguments
            if let after {
                conditions.append("(note.updated_at, note.id) < (?, ?)")
                arguments += [after.updatedAt, after.id]
            }
            timeBounds("note.updated_at", &conditions, &arguments)
            arguments += [limit]
            return (
                """
                SELECT note.* FROM note INDEXED BY \(index) WHERE \(conditions.joined(separator: " AND ")) \
                ORDER BY note.updated_at DESC, note.id DESC LIMIT ?
                """, arguments
            )
        }
        // The tag's rows in order, each joined to its note by primary key.
        // Times bound the same index range the order walks: the scan stops at `since`.
        var conditions = ["t.tag = ?"]
        var arguments: StatementArguments = [tag]
        if let after {
            conditions.append("(t.updated_at, t.note_id) < (?, ?)")
            arguments += [after.updatedAt, after.id]
        }
        timeBounds("t.updated_at", &conditions, &arguments)
        arguments += [limit]
        return (
            "SELECT note.* FROM \(selection.from) WHERE \(conditions.joined(separator: " AND ")) ORDER BY t.updated_at DESC, t.note_id DESC LIMIT ?",
            arguments
        )
    }

    /// The rows a filter selects: where from, and on what condition (a
    /// tag's notes through `note_tag`, which holds live notes only).
    var selection: (from: String, condition: String, arguments: StatementArguments) {
        switch filter {
        case .all: ("note", "note.deleted_at IS NULL", [])
        case .deleted: ("note", "note.deleted_at IS NOT NULL", [])
        case .category(let name): ("note", "note.deleted_at IS NULL AND note.category = ?", [name])
        case .notebook(let id): ("note", "note.deleted_at IS NULL AND note.notebook_id = ?", [id])
        case .tag(let tag): ("note_tag t JOIN note ON note.id = t.note_id", "t.tag = ?", [tag])
        }
    }

    /// The index the default order walks for each filter but a tag's.
    private var index: String {
        switch filter {
        case .all, .tag: "note_live"
        case .deleted: "note_deleted"
        case .category: "note_by_category"
        case .notebook: "note_by_notebook"
        }
    }

    /// `--since` and `--until` on `column`.
    private func timeBounds(_ column: String, _ conditions: inout [String], _ arguments: inout StatementArguments) {
        if let since {
            conditions.append("\(column) >= ?")
            arguments += [since]
        }
        if let until {
            conditions.append("\(column) < ?")
            arguments += [until]
        }
    }
}

extension NoteQuery {
    /// Any order but the default: the filter's rows sorted (a temporary
    /// b-tree over the notes the filter selects), each page starting after
    /// the cursor's sort key and id.
    func orderedSQL() -> (String, StatementArguments) {
        let selection = self.selection
        var conditions = [selection.condition]
        var arguments = selection.arguments
        let key = order.column
        let ascending = order.ascending != reversed
        let direction = ascending ? "ASC" : "DESC"
        let beyond = ascending ? ">" : "<"
        if let after {
            conditions.append("(\(key) \(beyond) ? OR (\(key) = ? AND note.id \(beyond) ?))")
            let value: DatabaseValue =
                switch after.key {
                case .time(let time), .created(let time): time.databaseValue
                case .title(let title): title.databaseValue
                }
            arguments += [value, value, after.id]
        }
        timeBounds("note.updated_at", &conditions, &arguments)
        arguments += [limit]
        return (
            """
            SELECT note.* FROM \(selection.from) WHERE \(conditions.joined(separator: " AND ")) \
            ORDER BY \(key) \(direction), note.id \(direction) LIMIT ?
            """,
            arguments
        )
    }
}

/// How `ls` orders notes.
public enum NoteOrder: String, Sendable, Hashable, CaseIterable {
    /// By last change, newest first.
    case updated
    /// By creation, newest first.
    case created
    /// By title, A to Z, case ignored.
    case title

    var column: String {
        switch self {
        case .updated: "note.updated_at"
        case .created: "note.created_at"
        case .title: "note.title COLLATE NOCASE"
        }
    }

    var ascending: Bool { self == .title }
}

/// Where a page of notes ends: the last note's sort key and id, as text a
/// user passes back with `--after`.
///
/// ```swift
/// let cursor = NoteCursor(note, order: .title)
/// NoteCursor(text: cursor.text) == cursor   // true
/// ```
public struct NoteCursor: Sendable, Hashable {
    /// A note's value in the list's order: when it last changed (the
    /// default order), when it was made, or its title.
    public enum Key: Sendable, Hashable {
        case time(Int64)
        case created(Int64)
        case title(String)
    }

    public var key: Key
    public var id: String

    public init(key: Key, id: String) {
        self.key = key
        self.id = id
    }

    public init(updatedAt: Int64, id: String) {
        self.init(key: .time(updatedAt), id: id)
    }

    /// The cursor after `note` in the default order (by last change).
    public init(_ note: Note) {
        self.init(note, order: .updated)
    }

    public init(_ note: Note, order: NoteOrder) {
        switch order {
        case .updated: self.init(key: .time(note.updatedAt), id: note.id)
        case .created: self.init(key: .created(note.createdAt), id: note.id)
        case .title: self.init(key: .title(note.title), id: note.id)
        }
    }

    /// The time of a cursor of a list by time (`updatedAt` for the default order).
    public var updatedAt: Int64 {
        if case .time(let time) = key { return time }
        return 0
    }

    /// `<time>.<id>`, `c<time>.<id>`, or `t<title as base64url>.<id>`.
    public var text: String {
        switch key {
        case .time(let time): return "\(time).\(id)"
        case .created(let time): return "c\(time).\(id)"
        case .title(let title):
            let encoded = Data(title.utf8).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            return "t\(encoded).\(id)"
        }
    }

    public init?(text: String) {
        guard let dot = text.firstIndex(of: ".") else { return nil }
        let head = text[..<dot]
        let id = String(text[text.index(after: dot)...])
        guard !id.isEmpty else { return nil }
        if head.hasPrefix("t") {
            var encoded = String(head.dropFirst()).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while encoded.count % 4 != 0 { encoded += "=" }
            guard let data = Data(base64Encoded: encoded), let title = String(data: data, encoding: .utf8) else { return nil }
            self.init(key: .title(title), id: id)
        } else if head.hasPrefix("c") {
            guard let time = Int64(head.dropFirst()) else { return nil }
            self.init(key: .created(time), id: id)
        } else {
            guard let time = Int64(head) else { return nil }
            self.init(key: .time(time), id: id)
        }
    }

    /// Whether this cursor can continue a list in `order`.
    public func fits(_ order: NoteOrder) -> Bool {
        switch key {
        case .time: order == .updated
        case .created: order == .created
        case .title: order == .title
        }
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
    /// Hits skipped before the first shown (the pages before this one).
    public var offset: Int
    /// Only hits the filter keeps (`.deleted` finds nothing: deleted notes
    /// are not indexed).
    public var filter: NoteQuery.Filter
    /// Only notes changed at or after this time (milliseconds since 1970).
    public var since: Int64?
    /// Only notes changed before this time.
    public var until: Int64?
    public var highlight: (String, String)

    /// `nil` when the text has no word to search for.
    public init?(
        _ text: String, limit: Int = 20, offset: Int = 0, filter: NoteQuery.Filter = .all, since: Int64? = nil, until: Int64? = nil,
        highlight: (String, String) = ("[", "]")
    ) {
        let words = text.split { !$0.isLetter && !$0.isNumber }.map(String.init)
        guard !words.isEmpty else { return nil }
        self.words = words
        match = words.map { "\"\($0)\"*" }.joined(separator: " ")
        self.limit = limit
        self.offset = offset
        self.filter = filter
        self.since = since
        self.until = until
        self.highlight = highlight
    }

    /// The hits, best first (their snippets are built by ``SearchSnippet``:
    /// FTS5's `snippet()` and `highlight()` are quadratic in a note that
    /// matches often).
    ///
    /// Unfiltered, FTS5 picks the page itself before any join; filtered,
    /// each hit is joined to its note and kept or not, best first.
    public func sql() -> (String, StatementArguments) {
        var conditions: [String] = []
        var arguments: StatementArguments = [match]
        switch filter {
        case .all: break
        case .deleted: conditions.append("0")
        case .category(let name):
            conditions.append("note.category = ?")
            arguments += [name]
        case .notebook(let id):
            conditions.append("note.notebook_id = ?")
            arguments += [id]
        case .tag(let tag):
            conditions.append("EXISTS (SELECT 1 FROM note_tag t WHERE t.note_id = note.id AND t.tag = ?)")
            arguments += [tag]
        }
        if let since {
            conditions.append("note.updated_at >= ?")
            arguments += [since]
        }
        if let until {
            conditions.append("note.updated_at < ?")
            arguments += [until]
        }
        arguments += [limit, offset]
        guard !conditions.isEmpty else {
            return (
                """
                SELECT note.*, hit.rank FROM (
                    SELECT rowid, rank FROM note_fts WHERE note_fts MATCH ? ORDER BY rank LIMIT ? OFFSET ?
                ) hit
                JOIN note_key ON note_key.key = hit.rowid JOIN note ON note.id = note_key.note_id
                ORDER BY hit.rank
                """, arguments
            )
        }
        return (
            """
            SELECT note.*, note_fts.rank AS rank FROM note_fts
            JOIN note_key ON note_key.key = note_fts.rowid JOIN note ON note.id = note_key.note_id
            WHERE note_fts MATCH ? AND \(conditions.joined(separator: " AND "))
            ORDER BY note_fts.rank LIMIT ? OFFSET ?
            """, arguments
        )
    }

    public static func == (lhs: NoteSearch, rhs: NoteSearch) -> Bool {
        lhs.match == rhs.match && lhs.limit == rhs.limit && lhs.offset == rhs.offset && lhs.filter == rhs.filter
            && lhs.since == rhs.since && lhs.until == rhs.until && lhs.highlight == rhs.highlight
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(match)
        hasher.combine(limit)
        hasher.combine(offset)
        hasher.combine(filter)
    }
}
