import Ferry
import FerryHTTPClient
import FerryProtocol
import Foundation
import GRDB

/// Notebooks and sync: a notebook is a shared scope, created and shared on
/// the server at the next sync (so both work offline), and `sync` follows
/// every scope the server lists for the user.
///
/// ```swift
/// let notebook = try notes.createNotebook("Trip")
/// try notes.shareNotebook("Trip", with: "bob", role: .write)
/// let summary = try await notes.sync { status in print(status.phase) }
/// ```
extension NotesLibrary {
    /// Creates a notebook, a shared scope owned by the user (made on the
    /// server at the next sync).
    @discardableResult
    public func createNotebook(_ name: String) throws -> Notebook {
        let session = try requireSession()
        let name = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !name.isEmpty else { throw NotesError(.usage, "a notebook needs a name") }
        let now = clock()
        return try database.write { db in
            guard try Notebook.filter(Column("name") == name).fetchCount(db) == 0 else {
                throw NotesError(.failure, "a notebook named \(name) exists already")
            }
            return try Self.makeNotebook(name, owner: session.user, now: now, db)
        }
    }

    /// A new notebook in `db`, its scope queued to be created on the server at the next sync.
    static func makeNotebook(_ name: String, owner: String, now: Int64, _ db: Database) throws -> Notebook {
        let id = newID()
        let notebook = Notebook(id: id, name: name, scope: ScopeName.shared("nb-\(id)", ownedBy: owner), owner: owner, createdAt: now)
        // The scope first, then the row that lives in it.
        try db.execute(sql: "INSERT INTO notes_server_task(kind, scope) VALUES ('create', ?)", arguments: [notebook.scope])
        try notebook.insert(db)
        return notebook
    }

    /// Gives `user` a role in a notebook (applied on the server at the next sync).
    public func shareNotebook(_ name: String, with user: String, role: ScopeRole) throws {
        let session = try requireSession()
        guard user != session.user else { throw NotesError(.failure, "you own your notebooks already") }
        guard ScopeName.isValidUserID(user) else { throw NotesError(.usage, "\(user) is not a valid user id") }
        try database.write { db in
            let notebook = try Self.notebook(named: name, db)
            guard notebook.owner == session.user else {
                throw NotesError(.failure, "only \(notebook.owner), who owns \(name), can share it")
            }
            try db.execute(
                sql: "INSERT INTO notes_server_task(kind, scope, user, role) VALUES ('share', ?, ?, ?)",
                arguments: [notebook.scope, user, role.rawValue])
        }
    }

    /// The notebooks on this device, by name.
    public func notebooks() throws -> [Notebook] {
        try database.read { db in try Notebook.order(Column("name"), Column("id")).fetchAll(db) }
    }

    /// Server work still queued (notebooks to create, shares to apply).
    public func pendingServerTasks() throws -> Int {
        try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM notes_server_task") ?? 0 }
    }

    /// A sync engine for the signed-in user, following the shared scopes
    /// last listed by the server.
    public func engine(live: Bool = false) throws -> SyncEngine {
        let session = try requireSession()
        let shared = try followedScopes()
        var configuration = SyncConfiguration(userID: session.user, sharedScopes: shared, live: live)
        configuration.periodicInterval = live ? .seconds(60) : nil
        return try SyncEngine(
            database: database, transport: HTTPSyncTransport(baseURL: session.server),
            configuration: configuration, token: session.token)
    }

    /// Runs queued server work, refreshes the scopes followed, and syncs.
    /// `status` is told of the engine's progress.
    ///
    /// - throws: ``NotesError`` `.unreachable` when the server cannot be
    ///   reached (nothing is lost: the changes stay queued), `.refused` when
    ///   it refuses the token.
    public func sync(status: @escaping @Sendable (SyncStatus) -> Void = { _ in }) async throws -> SyncSummary {
        let session = try requireSession()
        do {
            try await refreshScopes(session)
        } catch {
            throw ScopeClient.explain(error)
        }
        let engine = try engine()
        let watcher = Task {
            for await update in engine.statusUpdates() { status(update) }
        }
        defer { watcher.cancel() }
        let summary: SyncSummary
        do {
            summary = try await engine.sync()
        } catch {
            throw Self.explain(error, server: session.server)
        }
        try settleBookkeeping()
        try setSetting("last_sync", String(clock()))
        return summary
    }

    /// Creates and shares on the server what was queued, then lists the
    /// user's scopes to follow (and the role in each). A task the server
    /// refuses for good (a share with no such user, say) is dropped, and
    /// said in `dropped`, so it never blocks the next sync.
    func refreshScopes(_ session: Session) async throws {
        let client = ScopeClient(session: session)
        let tasks = try await database.read { db in
            try Row.fetchAll(db, sql: "SELECT seq, kind, scope, user, role FROM notes_server_task ORDER BY seq")
        }
        var dropped: [String] = []
        for task in tasks {
            let scope: String = task["scope"]
            do {
                if task["kind"] == "create" {
                    try await client.create(scope)
                } else if task["kind"] == "unshare", let user: String = task["user"] {
                    try await client.unshare(scope, from: user)
                } else if let user: String = task["user"] {
                    try await client.share(scope, with: user, role: ScopeRole(rawValue: task["role"] ?? "read") ?? .read)
                }
            } catch let error as ScopeClient.Refusal where error.status != 401 {
                dropped.append(error.message)
            }
            let seq: Int64 = task["seq"]
            try await database.write { db in try db.execute(sql: "DELETE FROM notes_server_task WHERE seq = ?", arguments: [seq]) }
        }
        let scopes = try await client.list().filter { !$0.scope.hasPrefix("user:") }.sorted { $0.scope < $1.scope }
        try setSetting("scopes", scopes.map { "\($0.scope) \($0.role.rawValue)" }.joined(separator: "\n"))
        if !dropped.isEmpty { try setSetting("dropped_tasks", dropped.joined(separator: "\n")) }
    }

    /// What the server refused of the queued notebook work at the last
    /// sync, once: reading it clears it.
    public func takeDroppedServerTasks() throws -> [String] {
        let text = try setting("dropped_tasks") ?? ""
        try database.write { db in try db.execute(sql: "DELETE FROM notes_setting WHERE key = 'dropped_tasks'") }
        return text.split(separator: "\n").map(String.init)
    }

    func followedScopes() throws -> [String] {
        (try setting("scopes") ?? "").split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    static func explain(_ error: any Error, server: URL) -> any Error {
        switch error {
        case let error as SyncTransportError:
            switch error {
            case .unreachable, .timedOut:
                return NotesError(.unreachable, "the server at \(server.absoluteString) is unreachable; your changes stay queued for the next sync")
            case .http(let status, let body, _) where status == 401 || status == 403:
                return NotesError(.refused, "the server refused: \(body?.message ?? "status \(status)"); `ferry-notes login` with a fresh token")
            default:
                return NotesError(.failure, "sync failed: \(error)")
            }
        case let error as FerryError:
            return NotesError(.failure, error.message)
        default:
            return error
        }
    }
}
