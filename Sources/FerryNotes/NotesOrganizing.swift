import Ferry
import Foundation
import GRDB

/// Renaming and removing notebooks and categories, and taking a member
/// out of a notebook. Each is a local write (synced like any other); taking
/// a member out is server work, queued like sharing and done at the next
/// sync, so all of it works offline.
///
/// ```swift
/// try notes.renameNotebook("Trip", to: "Lisbon 2026")
/// try notes.unshareNotebook("Lisbon 2026", from: "bob")
/// let moved = try notes.renameCategory("work", to: "job")
/// ```
extension NotesLibrary {
    /// Renames a notebook, on every member's device at the next sync.
    ///
    /// - throws: ``NotesError`` `.notFound` for no such notebook,
    ///   `.failure` for a name taken or a notebook the user may only read.
    public func renameNotebook(_ name: String, to newName: String) throws {
        let newName = newName.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !newName.isEmpty else { throw NotesError(.usage, "a notebook needs a name") }
        try database.write { db in
            var notebook = try Self.notebook(named: name, db)
            try Self.requireWritable(notebook.scope, db)
            guard newName != notebook.name else { throw NotesError(.usage, "the notebook is called \(newName) already") }
            guard try Notebook.filter(Column("name") == newName).fetchCount(db) == 0 else {
                throw NotesError(.failure, "a notebook named \(newName) exists already")
            }
            notebook.name = newName
            try notebook.update(db)
        }
    }

    /// Takes `user` out of a notebook the user owns (done on the server at
    /// the next sync): their devices stop receiving it.
    public func unshareNotebook(_ name: String, from user: String) throws {
        let session = try requireSession()
        guard ScopeName.isValidUserID(user) else { throw NotesError(.usage, "\(user) is not a valid user id") }
        try database.write { db in
            let notebook = try Self.notebook(named: name, db)
            guard notebook.owner == session.user else {
                throw NotesError(.failure, "only \(notebook.owner), who owns \(name), can take members out of it")
            }
            guard user != session.user else { throw NotesError(.failure, "you own \(name); an owner cannot leave their own notebook") }
            try db.execute(
                sql: "INSERT INTO notes_server_task(kind, scope, user) VALUES ('unshare', ?, ?)", arguments: [notebook.scope, user])
        }
    }

    /// Deletes a notebook the user owns: its notes go to the trash (where
    /// `restore` brings each back, still in the notebook's scope) and the
    /// notebook leaves every member's list, at the next sync. The shared
    /// scope stays on the server with its members (the API has no way to
    /// delete a scope); `unshareNotebook` first takes members out. Returns
    /// how many notes went to the trash.
    @discardableResult
    public func deleteNotebook(_ name: String) throws -> Int {
        let session = try requireSession()
        let now = clock()
        return try database.write { db in
            let notebook = try Self.notebook(named: name, db)
            guard notebook.owner == session.user else {
                throw NotesError(.failure, "only \(notebook.owner), who owns \(name), can delete it")
            }
            var trashed = 0
            for var note in try Note.filter(Column("notebook_id") == notebook.id && Column("deleted_at") == nil).fetchAll(db) {
                note.deletedAt = now
                note.updatedAt = max(now, note.updatedAt + 1)
                try note.update(db)
                trashed += 1
            }
            try notebook.delete(db)
            return trashed
        }
    }

    /// What a category change did: notes changed, and notes left as they
    /// were because they sit in notebooks the user may only read.
    public struct CategoryChange: Sendable, Hashable {
        public var changed: Int
        public var readOnly: Int
    }

    /// Gives every note in category `name` the category `newName` (its
    /// colour goes along, unless `newName` has one already).
    ///
    /// - throws: ``NotesError`` `.notFound` when no note or colour uses `name`.
    @discardableResult
    public func renameCategory(_ name: String, to newName: String) throws -> CategoryChange {
        let newName = newName.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !newName.isEmpty else { throw NotesError(.usage, "a category needs a name") }
        guard newName != name else { throw NotesError(.usage, "the category is called \(name) already") }
        return try recategorize(name, to: newName)
    }

    /// Takes category `name` off every note and forgets its colour.
    @discardableResult
    public func deleteCategory(_ name: String) throws -> CategoryChange {
        try recategorize(name, to: nil)
    }

    private func recategorize(_ name: String, to newName: String?) throws -> CategoryChange {
        let now = clock()
        return try database.write { db in
            let notes = try Note.filter(Column("category") == name).fetchAll(db)
            let rows = try Category.filter(Column("name") == name).fetchAll(db)
            guard !notes.isEmpty || !rows.isEmpty else {
                throw NotesError(.notFound, "no category \(name); `ferry-notes category ls` lists them")
            }
            var change = CategoryChange(changed: 0, readOnly: 0)
            for var note in notes {
                guard (try? Self.requireWritable(note.scope, db)) != nil else {
                    change.readOnly += 1
                    continue
                }
                note.category = newName
                note.updatedAt = max(now, note.updatedAt + 1)
                try note.update(db)
                change.changed += 1
            }
            let color = rows.lazy.compactMap(\.color).first
            if let newName, let color,
                try Category.filter(Column("name") == newName && Column("color") != nil).fetchCount(db) == 0
            {
                try db.execute(
                    sql: "INSERT INTO category(id, name, color) VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET color = excluded.color",
                    arguments: [Self.categoryID(newName), newName, color])
            }
            // Every row of the name (one made here, one synced from another device), unless read-only notes still use it.
            if change.readOnly == 0 {
                for row in rows { try row.delete(db) }
            }
            return change
        }
    }
}
