import FerryProtocol
import FerrySQLite
import Foundation
import GRDB

extension SQLiteSyncStore {
    /// Reads one page per scope and the client's last applied id from one
    /// WAL snapshot. Versions commit in order here, so the store's version
    /// is the end every page can reach.
    ///
    /// A pull whose every scope is quiet after its cursors (nothing written
    /// there since) is answered from `LastChanges` alone, without the
    /// read; the rest read the file, and teach the client's last applied id.
    public func pullEncoded(_ request: PullRequest, userID: String, limit: Int, notices: Bool) async throws -> EncodedPullResponse {
        let client = LastChanges.Client(userID: userID, clientID: request.clientID)
        if let answer = quietAnswer(request, userID: userID, limit: limit) {
            // A page with more to come may end quiet (its notices had more, the client's own): the
            // answer read ahead for the next pull is not for the one after.
            if notices { readAhead.forget(client) }
            return answer
        }
        // Only a client's own pulls, with notices, are read ahead; a live page's pulls pass by.
        if notices, let ahead = await readAhead.take(request, client: client, limit: limit, epoch: cursors.epoch, writes: writes) {
            known.withLock { $0.learn(ahead.read, since: ahead.generation) }
            readAhead(after: ahead.answer, of: request, client: client, limit: limit)
            return ahead.answer
        }
        let generation = known.withLock { $0.generation }
        let file = try await readFile(request, userID: userID, limit: limit, notices: notices)
        known.withLock { $0.learn(file.read, since: generation) }
        if notices { readAhead(after: file.answer, of: request, client: client, limit: limit) }
        return file.answer
    }

    /// Reads in the background the pull a Ferry client sends after
    /// `answer`, if a page has more to come (``ReadAheadPulls``): on one
    /// snapshot of a file no write changed from before the read to after it.
    private func readAhead(after answer: EncodedPullResponse, of request: PullRequest, client: LastChanges.Client, limit: Int) {
        guard answer.heldBytes <= ReadAheadPulls.maxAnswerBytes, let next = PullReadAhead.nextRequest(after: answer, of: request),
            readAhead.admits(client)
        else { return }
        readAhead.hold(next, for: client, limit: limit) { [self] in
            guard let before = writes.stable else { return nil }
            let generation = known.withLock { $0.generation }
            guard let file = try? await readFile(next, userID: client.userID, limit: limit, notices: true), writes.stable == before,
                file.answer.heldBytes <= ReadAheadPulls.maxAnswerBytes
            else { return nil }
            return ReadAheadPulls.Read(
                answer: file.answer, read: file.read, generation: generation, noticeStart: file.noticeStart, writes: before)
        }
    }

    /// The answer to a pull whose every followed scope had no row and no
    /// notice written after its cursors, from ``LastChanges``; `nil` when
    /// one may have, or the client's last applied id is not known, or a
    /// cursor is missing, unreadable or asks for more than "what is new"
    /// (the read then answers, or refuses, as ever).
    ///
    /// Its cursors move to the store's version as a read's would: no row
    /// of the scope lies between the two. A cursor that is already there is
    /// handed back as it came.
    func quietAnswer(_ request: PullRequest, userID: String, limit: Int) -> EncodedPullResponse? {
        let client = LastChanges.Client(userID: userID, clientID: request.clientID)
        let (version, horizon, lastApplied, lastChanges) = known.withLock { known in
            (known.version, known.horizon, known.lastApplied(by: client), request.scopes.map { known.lastChange(of: $0.scope, for: userID) })
        }
        guard let lastApplied else { return nil }
        let assembler = PullAssembler(
            clientID: request.clientID, userID: userID, limit: limit, maxPageBytes: maxPageBytes, cursors: cursors,
            horizon: ChangePosition(major: horizon), end: ChangePosition(major: version))
        var pages: [EncodedPullPage] = []
        for (followed, last) in zip(request.scopes, lastChanges) {
            // Without a notice cursor, where notices start is read from the file.
            guard followed.notices != nil, let start = try? assembler.start(of: followed), case .after(let position) = start.rows,
                last.row <= position.major, last.notice <= start.notices.minor,
                let page = try? assembler.page(followed.scope, start: start, rows: assembler.pageRows(), notices: [])
            else { return nil }
            pages.append(page)
        }
        return EncodedPullResponse(lastAppliedMutationID: lastApplied, pages: pages)
    }

    /// The pull read from the file, on one WAL snapshot.
    func readPull(_ request: PullRequest, userID: String, limit: Int, notices: Bool) async throws -> EncodedPullResponse {
        try await readFile(request, userID: userID, limit: limit, notices: notices).answer
    }

    /// The pull read from the file, what the read tells ``LastChanges``,
    /// and where notices start for a pull without a notice cursor.
    private func readFile(
        _ request: PullRequest, userID: String, limit: Int, notices: Bool
    ) async throws -> (answer: EncodedPullResponse, read: LastChanges.Read, noticeStart: ChangePosition) {
        let withNotices = notices
        let cursors = self.cursors
        let maxPageBytes = self.maxPageBytes
        return try await read { db in
            let lastApplied = try Self.lastMutationID(db, userID: userID, clientID: request.clientID)
            let version = try Self.meta(db, "version")
            var read = LastChanges.Read(
                version: version, client: LastChanges.Client(userID: userID, clientID: request.clientID), lastApplied: lastApplied)
            var assembler = PullAssembler(
                clientID: request.clientID, userID: userID, limit: limit, maxPageBytes: maxPageBytes, cursors: cursors,
                horizon: ChangePosition(major: try Self.meta(db, "horizon")), end: ChangePosition(major: version)
            )
            assembler.noticeStart = ChangePosition(major: 0, minor: try Self.noticeStart(db, userID: userID, clientID: request.clientID))
            var pages: [EncodedPullPage] = []
            for followed in request.scopes {
                let start = try assembler.start(of: followed)
                let rows = try Self.page(
                    db, scope: followed.scope, after: start.rows.position.major, withTombstones: !start.rows.isFromScratch,
                    limit: assembler.queryLimit, into: assembler.pageRows()
                )
                let notices =
                    withNotices
                    ? try Self.notices(db, userID: userID, scope: followed.scope, after: start.notices.minor, limit: assembler.queryLimit) : []
                var page = try assembler.page(followed.scope, start: start, rows: rows, notices: notices)
                if withNotices, !page.hasMore, let text = page.noticeCursor,
                    let position = try? NoticeCursor.position(from: text, epoch: cursors.epoch)
                {
                    // Every notice of the user's here was read: none lies past where its cursor now stands.
                    read.notices[LastChanges.Notices(userID: userID, scope: followed.scope)] = position.minor
                }
                if assembler.needsEstimate(page, start: start) {
                    // Read from the (scope, version) index alone: deleted rows not yet collected count too (an
                    // estimate a little high; the exact count read every row, 5% of a 100k-row first sync).
                    page.estimatedRows = try Int.fetchOne(
                        db.cachedStatement(sql: "SELECT count(*) FROM rows WHERE scope = ?"), arguments: [followed.scope])
                }
                pages.append(page)
            }
            return (EncodedPullResponse(lastAppliedMutationID: lastApplied, pages: pages), read, assembler.noticeStart)
        }
    }

    public func endCursors(scopes: [String]) async throws -> [String: String] {
        let cursors = self.cursors
        let version = try await read { db in try Self.meta(db, "version") }
        return Dictionary(
            uniqueKeysWithValues: scopes.map { scope in
                (scope, cursors.encode(PullCursor(epoch: cursors.epoch, scope: scope, position: version)))
            })
    }

    /// The page query: rows of `scope` changed after `version`, each
    /// written into the page's JSON straight from the statement's column
    /// bytes as it is read (``EncodedRows``, `Statement.forEachRow`), until
    /// one does not fit the page.
    private static func page(
        _ db: Database, scope: String, after version: Int64, withTombstones: Bool, limit: Int, into rows: EncodedRows
    ) throws -> EncodedRows {
        let statement = try db.cachedStatement(
            sql: """
                SELECT tbl, row_id, version, deleted, cells FROM rows
                WHERE scope = ? AND version > ? AND (deleted = 0 OR ?)
                ORDER BY version LIMIT ?
                """)
        try statement.bind { binder in
            try binder.bind(scope)
            try binder.bind(version)
            try binder.bind(withTombstones ? 1 : 0)
            try binder.bind(Int64(limit))
        }
        var rows = rows
        try statement.forEachRow { row in
            let version = row.int64(at: 2)
            return try rows.append(
                table: row.text(at: 0), rowID: row.text(at: 1), version: version, deleted: row.bool(at: 3), cells: row.text(at: 4),
                position: ChangePosition(major: version))
        }
        return rows
    }

    /// Where a client without a notice cursor starts: the newest notice
    /// when it first pushed, or now if it never pushed.
    private static func noticeStart(_ db: Database, userID: String, clientID: String) throws -> Int64 {
        if let client = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT first_notice FROM clients WHERE user_id = ? AND client_id = ?"),
            arguments: [userID, clientID])
        {
            return client[0] ?? 0
        }
        return try Int64.fetchOne(db.cachedStatement(sql: "SELECT coalesce(max(id), 0) FROM notices")) ?? 0
    }

    /// The notice query: the user's notices in `scope` after notice `id`.
    private static func notices(_ db: Database, userID: String, scope: String, after id: Int64, limit: Int) throws -> [NoticeQueryRow] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT id, by_user, by_client, notice, generation, settles FROM notices
                    WHERE user_id = ? AND scope = ? AND id > ? ORDER BY id LIMIT ?
                    """),
            arguments: [userID, scope, id, limit]
        ).map { row in
            let id: Int64 = row[0]
            return NoticeQueryRow(
                id: id, position: ChangePosition(major: 0, minor: id), byUser: row[1], byClient: row[2], json: row[3],
                generation: row[4], settles: row[5])
        }
    }
}
