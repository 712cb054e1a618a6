import Ferry
import Foundation
import GRDB

/// The notes app's data: every command's reads and writes, on one Ferry
/// database. Writes are ordinary local transactions (Ferry captures each
/// into its outbox); reads use the indexes the schema made for them.
///
/// ```swift
/// let notes = try NotesLibrary(path: "notes.sqlite")
/// try notes.signIn(server: url, token: token)
/// let note = try notes.add(title: "Groceries", body: "milk", tags: ["home"])
/// let page = try notes.list(NoteQuery(filter: .tag("home"), limit: 20))
/// ```
public final class NotesLibrary: Sendable {
    public let database: FerryDatabase
    let clock: @Sendable () -> Int64

    public init(
        path: String, attachmentsDirectory: URL? = nil,
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
    ) throws {
        var configuration = FerryConfiguration()
        configuration.attachmentsDirectory =
            attachmentsDirectory
            ?? URL(filePath: path).deletingLastPathComponent().appending(path: URL(filePath: path).lastPathComponent + "-attachments")
        configuration.label = "ferry-notes"
        // The database holds the sign-in token: readable by its owner alone, from the moment it exists.
        // O_EXCL: a database another process has just made is never replaced.
        let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY, 0o600)
        if descriptor >= 0 { close(descriptor) }
        database = try FerryDatabase(path: path, schema: NotesSchema.schema, configuration: configuration)
        self.clock = clock
        for file in [path, path + "-wal", path + "-shm"] where FileManager.default.fileExists(atPath: file) {
            try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        }
    }

    /// Opens a database this user may read but not write (another user's
    /// file, a read-only folder or volume): every reading command works,
    /// and a write fails with SQLite's `SQLITE_READONLY`.
    ///
    /// The file is opened immutable when its write-ahead log is absent or
    /// empty (SQLite cannot make the log's index in a folder it may not
    /// write); a log with content is read through, which needs its index
    /// file to exist already.
    ///
    /// ```swift
    /// let notes = try NotesLibrary(readOnlyPath: "/mnt/backup/notes.sqlite")
    /// let page = try notes.list(NoteQuery())
    /// ```
    public convenience init(readOnlyPath path: String) throws {
        let log = (try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? Int ?? 0
        var grdb = Configuration()
        grdb.readonly = true
        grdb.label = "ferry-notes"
        var uri = URLComponents()
        uri.scheme = "file"
        uri.path = URL(filePath: path).standardizedFileURL.path
        if log == 0 { uri.queryItems = [URLQueryItem(name: "immutable", value: "1")] }
        let queue = try DatabaseQueue(path: uri.string ?? path, configuration: grdb)
        var configuration = FerryConfiguration()
        configuration.label = "ferry-notes"
        configuration.attachmentsDirectory =
            URL(filePath: path).deletingLastPathComponent().appending(path: URL(filePath: path).lastPathComponent + "-attachments")
        self.init(database: try FerryDatabase(writer: queue, schema: NotesSchema.schema, configuration: configuration))
    }

    init(database: FerryDatabase, clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }) {
        self.database = database
        self.clock = clock
    }

    /// The most bytes a note may hold and still sync with a server on its
    /// default limits (a push is one request body, 4 MiB by default, with
    /// room for its envelope). `add` and `edit` warn past it.
    public static let syncableNoteBytes = (4 << 20) - (64 << 10)

    /// A warning for a note too large to sync, or `nil`.
    public static func sizeWarning(_ note: Note) -> String? {
        let bytes = note.title.utf8.count + note.body.utf8.count
        guard bytes > syncableNoteBytes else { return nil }
        let size = ByteCountFormatter.string(fromByteCount: Int64(bytes), countStyle: .binary)
        return "note \(note.id.prefix(8)) is \(size): a server on its default limits (4 MiB a request) will refuse it at sync; "
            + "split it, or move the text to an attachment"
    }

    // MARK: - Session

    /// Who is signed in, and to which server; `nil` before `login`.
    public func session() throws -> Session? {
        try database.read { db in
            let settings = try Self.settings(db)
            guard let server = settings["server"].flatMap(URL.init(string:)), let token = settings["token"],
                let user = settings["user"]
            else { return nil }
            return Session(server: server, token: token, user: user)
        }
    }

    /// Remembers the server and token (no network: works offline).
    ///
    /// - throws: ``NotesError`` `.usage` when the token names no user;
    ///   `.failure` when it has expired, or when the database holds another
    ///   user's notes.
    public func signIn(server: URL, token: String) throws -> Session {
        guard let user = Session.user(fromToken: token) else {
            throw NotesError(.usage, "the token names no user (it is not a Ferry JWT with a `sub`)")
        }
        if let expiry = Session.expiry(ofToken: token), expiry <= clock() {
            let when = Date(timeIntervalSince1970: Double(expiry) / 1000).formatted(.iso8601)
            throw NotesError(.failure, "the token expired at \(when); get a fresh one (`ferry-server token --user \(user)`)")
        }
        try database.write { db in
            if let previous = try Self.settings(db)["user"], previous != user,
                try Int.fetchOne(db, sql: "SELECT count(*) FROM note") ?? 0 > 0
            {
                throw NotesError(.failure, "this database holds \(previous)'s notes; use another --db for \(user)")
            }
            try Self.claimUnclaimed(for: user, db)
            for (key, value) in ["server": server.absoluteString, "token": token, "user": user] {
                try db.execute(
                    sql: "INSERT INTO notes_setting(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    arguments: [key, value])
            }
        }
        return Session(server: server, token: token, user: user)
    }

    /// Forgets the token (the notes stay).
    public func signOut() throws {
        try database.write { db in try db.execute(sql: "DELETE FROM notes_setting WHERE key = 'token'") }
    }

    /// Whose notes a write makes, and in which scope: the user signed in
    /// (or signed in before a `logout`), else nobody yet. Notes written
    /// before the first `login` are kept in ``unclaimedScope`` and moved to
    /// the user's own scope when they sign in, before anything is pushed.
    func writer(_ db: Database) throws -> (user: String, scope: String) {
        guard let user = try Self.settings(db)["user"] else { return (Self.unclaimedAuthor, Self.unclaimedScope) }
        return (user, "user:\(user)")
    }

    /// The scope of notes written before the first `login`: never sent
    /// (a push needs a session, and `signIn` claims them first).
    public static let unclaimedScope = "local:unclaimed"
    /// The author shown for notes written before the first `login`.
    public static let unclaimedAuthor = "me"

    /// Notes and their attachments written before the first sign-in
    /// become `user`'s, in the same transaction as the
    /// sign-in. The capture triggers record the move; the pending inserts
    /// it joins have never been pushed, so each note reaches the server
    /// once, as an insert in the user's scope.
    static func claimUnclaimed(for user: String, _ db: Database) throws {
        try db.execute(
            sql: """
                UPDATE note SET scope = ?, author = CASE WHEN author = ? THEN ? ELSE author END WHERE scope = ?
                """,
            arguments: ["user:\(user)", unclaimedAuthor, user, unclaimedScope])
        try db.execute(
            sql: "UPDATE ferry_attachments SET scope = ? WHERE scope = ?", arguments: ["user:\(user)", unclaimedScope])
    }

    func requireSession() throws -> Session {
        guard let session = try session() else {
            throw NotesError(.notSignedIn, "not signed in: run `ferry-notes login --server URL --token TOKEN` first (it works offline)")
        }
        return session
    }

    public func setting(_ key: String) throws -> String? {
        try database.read { db in try Self.settings(db)[key] }
    }

    public func setSetting(_ key: String, _ value: String) throws {
        try database.write { db in
            try db.execute(
                sql: "INSERT INTO notes_setting(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                arguments: [key, value])
        }
    }

    static func settings(_ db: Database) throws -> [String: String] {
        Dictionary(
            try Row.fetchAll(db, sql: "SELECT key, value FROM notes_setting").map { ($0["key"], $0["value"]) },
            uniquingKeysWith: { _, last in last })
    }

    // MARK: - Notes

    /// Adds a note and returns it.
    ///
    /// - throws: ``NotesError`` `.notFound` for a notebook that does not exist.
    @discardableResult
    public func add(
        title: String, body: String = "", category: String? = nil, tags: [String] = [],
        notebook: String? = nil
    ) throws -> Note {
        let title = title.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !title.isEmpty else { throw NotesError(.usage, "a note needs a title") }
        try Self.checkTags(tags)
        let now = clock()
        return try database.write { db in
            let writer = try writer(db)
            var scope = writer.scope
            var notebookID: String?
            if let notebook {
                let found = try Self.notebook(named: notebook, db)
                scope = found.scope
                notebookID = found.id
            }
            try Self.requireWritable(scope, db)
            let note = Note(
                id: Self.newID(), title: title, body: body, category: category, tags: tags, author: writer.user,
                notebookID: notebookID, scope: scope, createdAt: now, updatedAt: now)
            try note.insert(db)
            return note
        }
    }

    /// What an edit changes; `nil` leaves a field as it is.
    public struct Edit: Sendable, Hashable {
        public var title: String?
        public var body: String?
        /// `.some(nil)` clears the category.
        public var category: String??
        public var addTags: [String] = []
        public var removeTags: [String] = []
        /// Replaces every tag (the `$EDITOR` form).
        public var tags: [String]?
        /// Text added at the end of the body, on a line of its own.
        public var append: String?

        public init(
            title: String? = nil, body: String? = nil, category: String?? = nil, addTags: [String] = [],
            removeTags: [String] = [], tags: [String]? = nil, append: String? = nil
        ) {
            self.title = title
            self.body = body
            self.category = category
            self.addTags = addTags
            self.removeTags = removeTags
            self.tags = tags
            self.append = append
        }

        public var isEmpty: Bool { self == Edit() }
    }

    /// Applies `edit` to the note `id` names (any unique prefix).
    @discardableResult
    public func edit(_ id: String, _ edit: Edit) throws -> Note {
        try Self.checkTags(edit.addTags + (edit.tags ?? []))
        let now = clock()
        return try database.write { db in
            var note = try Self.note(id, db)
            try Self.requireWritable(note.scope, db)
            guard !note.isDeleted else {
                throw NotesError(.failure, "note \(note.id.prefix(8)) is in the trash; `ferry-notes restore \(note.id.prefix(8))` brings it back to edit")
            }
            if let title = edit.title {
                let trimmed = title.trimmingCharacters(in: .whitespacesAndNewlines)
                guard !trimmed.isEmpty else { throw NotesError(.usage, "a note needs a title") }
                note.title = trimmed
            }
            if let body = edit.body { note.body = body }
            if let append = edit.append {
                note.body += (note.body.isEmpty || note.body.hasSuffix("\n") ? "" : "\n") + append
            }
            if let category = edit.category { note.category = category }
            var tags = edit.tags ?? note.tags
            tags += edit.addTags
            tags.removeAll { edit.removeTags.contains($0) }
            note.tags = Note.normalized(tags)
            note.updatedAt = max(now, note.updatedAt + 1)
            try note.update(db)
            return note
        }
    }

    /// The categories, by name, with their colours: every category a note
    /// uses, and every one given a colour.
    public func categories() throws -> [Category] {
        try database.read { db in
            var byName: [String: Category] = [:]
            for category in try Category.fetchAll(db) where byName[category.name]?.color == nil {
                byName[category.name] = category
            }
            let used = try String.fetchAll(db, sql: "SELECT DISTINCT category FROM note WHERE category IS NOT NULL AND deleted_at IS NULL")
            for name in used where byName[name] == nil {
                byName[name] = Category(id: Self.categoryID(name), name: name, color: nil)
            }
            return byName.values.sorted { $0.name < $1.name }
        }
    }

    /// Gives a category a colour (`nil` clears it).
    ///
    /// Only a colour makes a category row: a device that merely uses a
    /// category name writes nothing, so it can never wipe the colour
    /// another device gave it (last-write-wins would let its empty colour
    /// win).
    public func setColor(_ color: String?, ofCategory name: String) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE category SET color = ? WHERE name = ?", arguments: [color, name])
            if db.changesCount == 0 {
                try db.execute(sql: "INSERT INTO category(id, name, color) VALUES (?, ?, ?)", arguments: [Self.categoryID(name), name, color])
            }
        }
    }

    /// A category's row id, from its name: two devices that colour it offline write the same row.
    static func categoryID(_ name: String) -> String {
        "cat-" + name.utf8.map { String(format: "%02x", $0) }.joined().prefix(240)
    }

    /// Tags are listed with commas between them (in `$EDITOR`, in conflicts), so none may hold one.
    static func checkTags(_ tags: [String]) throws {
        if let bad = tags.first(where: { $0.contains(",") }) {
            throw NotesError(.usage, "a tag cannot contain a comma: \(bad)")
        }
    }

    /// Refuses a write to a notebook this user may only read (as the
    /// server last listed the user's scopes); the server would refuse it.
    static func requireWritable(_ scope: String, _ db: Database) throws {
        guard !scope.hasPrefix("user:") else { return }
        let roles = try settings(db)["scopes"] ?? ""
        let role = roles.split(separator: "\n").first { $0.split(separator: " ").first.map(String.init) == scope }?
            .split(separator: " ").dropFirst().first
        if role == "read" {
            let name = try String.fetchOne(db, sql: "SELECT name FROM notebook WHERE scope = ?", arguments: [scope]) ?? scope
            throw NotesError(.failure, "you may only read notebook \(name); its owner can give you write access")
        }
    }

    /// Soft-deletes a note (`restore` brings it back).
    @discardableResult
    public func remove(_ id: String) throws -> Note {
        try setDeleted(id, true)
    }

    @discardableResult
    public func restore(_ id: String) throws -> Note {
        try setDeleted(id, false)
    }

    private func setDeleted(_ id: String, _ deleted: Bool) throws -> Note {
        let now = clock()
        return try database.write { db in
            var note = try Self.note(id, db, includingDeleted: true)
            try Self.requireWritable(note.scope, db)
            guard note.isDeleted != deleted else {
                throw NotesError(.failure, "note \(note.id.prefix(8)) is \(deleted ? "already deleted" : "not deleted")")
            }
            note.deletedAt = deleted ? now : nil
            note.updatedAt = max(now, note.updatedAt + 1)
            try note.update(db)
            return note
        }
    }

    /// Deletes every note in the trash for good, on every device at the
    /// next sync (the notes of notebooks the user may only read stay).
    /// Returns how many.
    @discardableResult
    public func emptyTrash() throws -> Int {
        try database.write { db in
            let trashed = try Note.filter(Column("deleted_at") != nil).fetchAll(db)
            var removed = 0
            for note in trashed where (try? Self.requireWritable(note.scope, db)) != nil {
                try note.delete(db)
                removed += 1
            }
            return removed
        }
    }

    /// Every tag on a note not in the trash, with how many notes carry it, most used first.
    public func tags() throws -> [(tag: String, notes: Int)] {
        try database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT tag.value AS tag, count(*) AS notes FROM note, json_each(note.tags) AS tag
                    WHERE note.deleted_at IS NULL GROUP BY tag.value ORDER BY notes DESC, tag.value
                    """
            ).map { ($0["tag"], $0["notes"]) }
        }
    }

    /// One note by any unique prefix of its id, deleted or not.
    public func show(_ id: String) throws -> Note {
        try database.read { db in try Self.note(id, db, includingDeleted: true) }
    }

    /// A page of notes, newest first.
    public func list(_ query: NoteQuery) throws -> [Note] {
        let (sql, arguments) = query.sql()
        return try database.read { db in try Note.fetchAll(db, sql: sql, arguments: arguments) }
    }

    /// A search hit: the note, and a snippet with the matches marked.
    public struct Hit: Sendable, Hashable {
        public var note: Note
        public var snippet: String
        public var rank: Double
    }

    /// Full-text search, best first: every word must match, each as a
    /// prefix, accents and case ignored. Matches in `snippet` are wrapped in
    /// `highlight`.
    public func search(_ text: String, limit: Int = 20, highlight: (String, String) = ("[", "]")) throws -> [Hit] {
        guard let search = NoteSearch(text, limit: limit, highlight: highlight) else { return [] }
        return try self.search(search)
    }

    /// A search with filters and paging:
    ///
    /// ```swift
    /// let page2 = try notes.search(NoteSearch("budget", limit: 20, offset: 20, filter: .tag("work"))!)
    /// ```
    public func search(_ search: NoteSearch) throws -> [Hit] {
        let (sql, arguments) = search.sql()
        let highlight = search.highlight
        return try database.read { db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                let note = try Note(row: row)
                // The title's match if it has one, else the body's, else the tags'.
                let snippet =
                    [note.title, note.body, note.tags.joined(separator: " ")].lazy
                    .compactMap { SearchSnippet.make(text: $0, words: search.words, highlight: highlight) }
                    .first ?? ""
                return Hit(note: note, snippet: snippet, rank: row["rank"])
            }
        }
    }

    // MARK: - Lookup

    /// The note an id prefix names.
    ///
    /// - throws: ``NotesError`` `.notFound` for none, `.ambiguous` (listing
    ///   the candidates) for several.
    static func note(_ prefix: String, _ db: Database, includingDeleted: Bool = true) throws -> Note {
        let id = try resolve(prefix, table: "note", label: "note", db)
        guard let note = try Note.fetchOne(db, key: id), includingDeleted || !note.isDeleted else {
            throw NotesError(.notFound, "no note \(prefix)")
        }
        return note
    }

    /// The one id of `table` that starts with `prefix`.
    static func resolve(_ prefix: String, table: String, label: String, _ db: Database) throws -> String {
        let prefix = prefix.lowercased()
        guard !prefix.isEmpty else { throw NotesError(.usage, "give a \(label) id (any unique prefix)") }
        let ids = try String.fetchAll(
            db, sql: "SELECT id FROM \(table) WHERE id >= ? AND id < ? ORDER BY id LIMIT 10",
            arguments: [prefix, prefix + "\u{10FFFF}"])
        switch ids.count {
        case 0: throw NotesError(.notFound, "no \(label) \(prefix)")
        case 1: return ids[0]
        default:
            if ids.contains(prefix) { return prefix }
            throw NotesError(.ambiguous, "\(label) id \(prefix) is ambiguous; it starts: \(ids.joined(separator: ", "))\(ids.count == 10 ? ", …" : "")")
        }
    }

    static func notebook(named name: String, _ db: Database) throws -> Notebook {
        let found = try Notebook.fetchAll(db, sql: "SELECT * FROM notebook WHERE name = ?", arguments: [name])
        guard let first = found.first else { throw NotesError(.notFound, "no notebook named \(name); `ferry-notes notebook ls` lists them") }
        guard found.count == 1 else {
            throw NotesError(.ambiguous, "\(found.count) notebooks are named \(name): \(found.map(\.scope).joined(separator: ", "))")
        }
        return first
    }

    /// 16 random hex digits: short to type, a prefix of them usually enough.
    static func newID() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(format: "%016llx", generator.next() as UInt64)
    }
}
