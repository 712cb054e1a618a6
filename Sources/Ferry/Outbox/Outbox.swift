import FerryProtocol
import FerrySQLite
import Foundation
import GRDB

/// The queue of local changes waiting to be pushed, filled by Ferry's
/// triggers in the same transaction as each write.
///
/// ```swift
/// let outbox = database.outbox
/// let batch = try outbox.nextBatch(limit: 100)   // coalesced, with mutation ids
/// // ... push them ...
/// try outbox.markAcknowledged(batch)
/// ```
///
/// ## Topics
///
/// ### Reading
/// - ``pendingMutations(limit:)``
/// - ``pendingCount()``
/// - ``observePendingCount()``
/// - ``rejectedEntries()``
///
/// ### Pushing
/// - ``nextBatch(limit:)``
/// - ``markAcknowledged(_:)``
/// - ``markRejected(_:reason:)``
/// - ``purge(retention:)``
public struct Outbox: Sendable {
    let database: FerryDatabase

    /// The pending changes, coalesced per row, in push order, with the rows'
    /// current values. Reads only: no mutation ids are assigned.
    public func pendingMutations(limit: Int? = nil) throws -> [PendingMutation] {
        try database.read { db in
            let coalesced = OutboxCoalescer.coalesce(try Self.pendingEntries(db, limit: limit))
            return try coalesced.mutations.map { try withValues($0, db) }
        }
    }

    /// Takes the next mutations to push, and freezes them.
    ///
    /// Mutations already handed out and not yet settled come first, again,
    /// with the same ids: the server may have applied them, so they are never
    /// merged with later edits. Then new edits are coalesced, given strictly
    /// increasing mutation ids, and recorded as handed out. Entries that
    /// cancel out (a row inserted and deleted before any push) are removed.
    public func nextBatch(limit: Int) throws -> [PendingMutation] {
        guard limit > 0 else {
            throw FerryError(.invalidConfiguration, "a push batch needs a limit of at least 1, got \(limit)")
        }
        return try database.write { db in try takeBatch(limit: limit, db) }
    }

    /// ``nextBatch(limit:)`` inside a write transaction the caller holds
    /// (the sync engine runs it through the async write).
    func takeBatch(limit: Int, _ db: Database) throws -> [PendingMutation] {
        try freeze(OutboxCoalescer.coalesce(try Self.pendingEntries(db, limit: limit)), limit: limit, db)
    }

    /// The batch after `inFlight`, taken while `inFlight` is still on the
    /// wire (its reply not yet recorded), so the two sides of a long drain
    /// overlap: the device freezes this batch while the server applies that
    /// one. It is pushed only after `inFlight`'s reply is recorded, so
    /// mutation ids still rise from push to push.
    ///
    /// It is the prefix of what ``takeBatch(limit:_:)`` would take once
    /// `inFlight` settled, up to the first row `inFlight` holds: the reply
    /// may change what that row's next edit carries (a refused row's next
    /// edit goes whole) or remove the row, so the edit waits for it. A batch
    /// that would cancel a row out (inserted and deleted before any push) is
    /// not taken ahead at all: empty, and the next batch is taken as usual.
    /// Whatever is taken ahead is handed out like any batch: a reply that
    /// never comes, or a batch never sent, leaves it pending with its ids,
    /// and the next batch sends it first. A reply that is not a plain
    /// acknowledgement (conflicts, refusals, a restored copy) forgets its
    /// ids instead (`PushRecorder`), and its edits are taken again.
    func takeBatch(limit: Int, after inFlight: [PendingMutation], _ db: Database) throws -> [PendingMutation] {
        let sent = Set(inFlight.flatMap(\.entrySeqs))
        let coalesced = OutboxCoalescer.coalesce(try Self.pendingEntries(db, limit: limit, skipping: sent))
        guard coalesced.discarded.isEmpty else { return [] }
        let waiting = Set(inFlight.map { RowKey(table: $0.table, rowID: $0.rowID) })
        let free = coalesced.mutations.prefix { !waiting.contains(RowKey(table: $0.table, rowID: $0.rowID)) }
        guard !free.isEmpty else { return [] }
        return try freeze(.init(mutations: Array(free), discarded: []), limit: limit, db)
    }

    /// Gives coalesced mutations their ids (those handed out before keep
    /// theirs) and freezes their payloads: what both ways of taking a batch
    /// end with.
    private func freeze(_ coalesced: OutboxCoalescer.Result, limit: Int, _ db: Database) throws -> [PendingMutation] {
        if !coalesced.discarded.isEmpty {
            try Self.saveHighestStamp(db)
            // A row made and removed here before any push may exist on the
            // server under the same id (another device's): a pull that came
            // meanwhile kept it out for the pending delete, so it is read back,
            // from the scope of its latest entry (the first row inserted wins).
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO ferry_row_fetches(tbl, row_id, scope)
                    SELECT tbl, row_id, scope FROM ferry_outbox WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq DESC
                    """, arguments: [Self.jsonArray(coalesced.discarded)])
            try db.execute(
                sql: "DELETE FROM ferry_outbox WHERE seq IN (SELECT value FROM json_each(?))",
                arguments: [Self.jsonArray(coalesced.discarded)])
        }
        var lastID: Int64 = try FerryMeta.value(.lastMutationID, in: db) ?? 0
        var batch: [PendingMutation] = []
        var selects: [String: Statement] = [:]
        for var mutation in coalesced.mutations.prefix(limit) {
            // A mutation's payload is frozen on its first entry (`ferry_outbox.frozen`).
            guard let first = mutation.entrySeqs.min() else { continue }
            if mutation.mutationID != nil,
                let payload = try String.fetchOne(
                    db.cachedStatement(sql: "SELECT frozen FROM ferry_outbox WHERE seq = ?"), arguments: [first])
            {
                // Resent exactly as first sent: the server may have applied it.
                if payload == Self.frozenDelete {
                    mutation.operation = .delete
                    mutation.columns = nil
                    mutation.values = [:]
                } else {
                    mutation.values = try ColumnValueJSON.decodeRow(payload).mapValues(\.databaseValue)
                }
                batch.append(mutation)
                continue
            }
            if mutation.operation == .upsert, mutation.columns != nil, mutation.baseVersion == nil,
                try Bool.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT 1 FROM ferry_outbox WHERE tbl = ? AND row_id = ? AND \(OutboxRecord.State.rejected.condition) LIMIT 1
                            """), arguments: [mutation.table, mutation.rowID]) ?? false
            {
                // The server refused this row before it ever held it: an edit of
                // some columns would make a partial row there. All of it goes.
                mutation.columns = nil
            }
            mutation = try withValues(mutation, db, statements: &selects)
            let payload =
                mutation.operation == .delete
                ? Self.frozenDelete : ColumnValueJSON.encodeRow(mutation.values.mapValues(ColumnValue.init))
            let mutationID: Int64
            if let handedOut = mutation.mutationID {
                mutationID = handedOut
            } else {
                lastID += 1
                mutationID = lastID
                mutation.mutationID = mutationID
            }
            // Each entry gets the id, the first the payload too, in the one update of it, bound directly:
            // a `json_each` of the entries per mutation cost more.
            let freeze = try db.cachedStatement(sql: "UPDATE ferry_outbox SET mutation_id = ?, frozen = ? WHERE seq = ?")
            for seq in mutation.entrySeqs {
                try freeze.execute { binder in
                    try binder.bind(mutationID)
                    try binder.bind(seq == first ? payload : nil)
                    try binder.bind(seq)
                }
            }
            batch.append(mutation)
        }
        try FerryMeta.setValue(lastID, for: .lastMutationID, in: db)
        // Ids must rise through a push. Mutations handed out before come
        // first, then the new ones, in write order (their ids are higher).
        batch.sort { ($0.mutationID ?? 0) < ($1.mutationID ?? 0) }
        return batch
    }

    /// Rows with local changes the server has not acknowledged yet: what
    /// a "not synced" badge shows. A row edited many times counts once. It
    /// is the same count as ``SyncStatus/pendingCount``.
    public func pendingCount() throws -> Int {
        try database.read(Self.pendingCount)
    }

    /// The pending count as an async sequence that yields after every change.
    ///
    /// ```swift
    /// for try await count in database.outbox.observePendingCount() {
    ///     badge.count = count
    /// }
    /// ```
    public func observePendingCount() -> AsyncValueObservation<Int> {
        ValueObservation.tracking(Self.pendingCount).removeDuplicates().values(in: database.writer)
    }

    /// Settles mutations the server acknowledged.
    public func markAcknowledged(_ mutations: [PendingMutation]) throws {
        try settle(mutations.flatMap(\.entrySeqs), state: .acknowledged, reason: nil)
    }

    /// Sets a mutation aside with the server's reason. It is not sent again
    /// and never blocks the mutations after it.
    public func markRejected(_ mutation: PendingMutation, reason: String) throws {
        try settle(mutation.entrySeqs, state: .rejected, reason: reason)
    }

    /// The mutations the server rejected (or that could never be sent), with
    /// their reasons, oldest first. Each can be fixed and resent, or discarded.
    ///
    /// ```swift
    /// for rejected in try database.outbox.rejectedMutations() {
    ///     print(rejected.table, rejected.rowID, rejected.reason)
    ///     try database.outbox.discard(rejected)
    /// }
    /// ```
    public func rejectedMutations() throws -> [RejectedMutation] {
        let entries = try rejectedEntries()
        var order: [String] = []
        var groups: [String: [RejectedEntry]] = [:]
        for rejected in entries {
            let key = rejected.entry.mutationID.map { "m\($0)" } ?? "s\(rejected.entry.seq)"
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(rejected)
        }
        return order.map { key in
            let group = groups[key]!
            return RejectedMutation(
                entrySeqs: group.map(\.entry.seq), table: group[0].entry.table,
                rowID: group[0].entry.rowID, reason: group[0].reason, rejectedAt: group[0].rejectedAt,
                values: group[0].values)
        }
    }

    /// Queues a rejected mutation again, under a new mutation id, with the
    /// row's current values: fix the row first, then resend.
    ///
    /// ```swift
    /// try database.write { db in try db.execute(sql: "UPDATE note SET title = ? WHERE id = ?", arguments: ["Fixed", id]) }
    /// try database.outbox.resend(rejected)
    /// ```
    public func resend(_ rejected: RejectedMutation) throws {
        try database.write { db in
            let resent = try OutboxRecord.all().filter(seqs: rejected.entrySeqs).filter(state: .rejected).updateAll(
                db,
                [
                    OutboxRecord.Columns.state.set(to: OutboxRecord.State.pending), OutboxRecord.Columns.reason.set(to: nil),
                    OutboxRecord.Columns.settledAt.set(to: nil), OutboxRecord.Columns.mutationID.set(to: nil),
                ])
            guard resent == rejected.entrySeqs.count else {
                throw FerryError(.outboxStateMismatch, "the rejected mutation of `\(rejected.table)` row \(rejected.rowID) was already resent, discarded or purged")
            }
        }
    }

    /// Drops a rejected mutation for good and restores the server's version
    /// of the row: from the rejection's reply when the server rejected it
    /// (columns with other pending edits are kept), or read back with
    /// `GET /v1/rows` at the next sync when the server refused the request
    /// outright (a 4xx) and sent no row, or when the device has pulled a
    /// newer version of the row since the reply.
    public func discard(_ rejected: RejectedMutation) throws {
        let layout = database.layouts[rejected.table]
        try database.writeWithoutCapture { db in
            try Self.saveHighestStamp(db)
            let request = OutboxRecord.all().filter(seqs: rejected.entrySeqs).filter(state: .rejected)
            let entries = try request.fetchAll(db)
            guard try request.deleteAll(db) == rejected.entrySeqs.count else {
                throw FerryError(.outboxStateMismatch, "the rejected mutation of `\(rejected.table)` row \(rejected.rowID) was already resent, discarded or purged")
            }
            guard let layout else { return }
            if let kept = try ServerRowRestore.decode(entries.lazy.compactMap(\.serverRow).first),
                try !ServerRowRestore.isOlderThanKnown(kept, table: rejected.table, rowID: rejected.rowID, db),
                try !Self.removedSince(kept, table: rejected.table, rowID: rejected.rowID, layout: layout, db)
            {
                // A row this database cannot store is left as the edit left it.
                _ = try ServerRowRestore.restoreIfStorable(kept, table: rejected.table, rowID: rejected.rowID, layout: layout, db)
            } else {
                let scope = entries.lazy.compactMap(\.entry.scope).first
                try RowFetchRecord(table: rejected.table, rowID: rejected.rowID, scope: scope).insert(db, onConflict: .replace)
            }
        }
    }

    /// Whether the row the rejection kept may be stale: it was alive, and
    /// this device neither holds the row nor knows any version of it now (it
    /// deleted the row since, or a refetch forgot it). The server's row is
    /// then read back instead of restoring the kept one.
    private static func removedSince(_ kept: ServerRow?, table: String, rowID: String, layout: TableLayout, _ db: Database) throws -> Bool {
        guard let kept, !kept.deleted else { return false }
        let known = try KnownVersions.version(table: table, rowID: rowID, db) != nil
        let held =
            try Bool.fetchOne(
                db, sql: "SELECT 1 FROM \(SQLText.identifier(layout.table.name)) WHERE \(SQLText.identifier(layout.primaryKey)) = ?",
                arguments: [rowID]) ?? false
        return !known && !held
    }

    /// The entries the server rejected and that are still kept.
    public func rejectedEntries() throws -> [RejectedEntry] {
        try database.read { db in
            try OutboxRecord.all().filter(state: .rejected).order(OutboxRecord.Columns.seq).fetchAll(db).map { record in
                RejectedEntry(
                    entry: record.entry, reason: record.reason ?? "", rejectedAt: record.settledAt ?? 0,
                    values: try record.refusedValues.map(ColumnValueJSON.decodeRow) ?? [:])
            }
        }
    }

    /// Deletes acknowledged and rejected entries older than `retention`
    /// allows, and returns how many went.
    @discardableResult
    public func purge(retention: OutboxRetention = OutboxRetention()) throws -> Int {
        let now = database.wallClock.nowMilliseconds()
        return try database.write { db in
            try Self.saveHighestStamp(db)
            typealias Columns = OutboxRecord.Columns
            let acknowledgedBefore = now - OutboxRetention.milliseconds(retention.acknowledged)
            let rejectedBefore = now - OutboxRetention.milliseconds(retention.rejected)
            return try OutboxRecord.filter(
                (Columns.state == OutboxRecord.State.acknowledged && Columns.settledAt <= acknowledgedBefore)
                    || (Columns.state == OutboxRecord.State.rejected && Columns.settledAt <= rejectedBefore)
            ).deleteAll(db)
        }
    }

    // MARK: - Internals

    /// The frozen payload of a mutation sent as a delete.
    static let frozenDelete = "delete"

    /// The clock lives on in the outbox's stamps: save the highest before entries go.
    static func saveHighestStamp(_ db: Database) throws {
        if let highest = try Int64.fetchOne(db, sql: "SELECT max(hlc) FROM ferry_outbox") {
            let saved: Int64 = try FerryMeta.value(.hlc, in: db) ?? 0
            if highest > saved { try FerryMeta.setValue(highest, for: .hlc, in: db) }
        }
    }

    /// Forgets every mutation id handed out and not settled, and continues
    /// numbering after `lastApplied`: for a server that has applied nothing
    /// past it (a gap it refused, or a new client identity at 0). The
    /// entries are coalesced and numbered again at the next batch.
    static func renumber(after lastApplied: Int64, in db: Database) throws {
        try OutboxRecord.all().filter(state: .pending).filter(OutboxRecord.Columns.mutationID != nil)
            .updateAll(db, OutboxRecord.Columns.mutationID.set(to: nil), OutboxRecord.Columns.frozen.set(to: nil))
        try FerryMeta.setValue(lastApplied, for: .lastMutationID, in: db)
    }

    /// Forgets the mutation ids handed out past `lastApplied`, for a server
    /// that lost the history they were made on: it has applied none of them
    /// (a push naming that history is refused), so they are coalesced again
    /// with what the recovery rebases, and numbered again at the next batch.
    /// Ids at or below `lastApplied` stay: the server applied them.
    static func forgetHandedOut(after lastApplied: Int64, in db: Database) throws {
        try OutboxRecord.all().filter(state: .pending).filter(OutboxRecord.Columns.mutationID > lastApplied)
            .updateAll(db, OutboxRecord.Columns.mutationID.set(to: nil), OutboxRecord.Columns.frozen.set(to: nil))
        let last: Int64 = try FerryMeta.value(.lastMutationID, in: db) ?? 0
        if last > lastApplied {
            let held =
                try Int64.fetchOne(
                    db, sql: "SELECT max(mutation_id) FROM \(OutboxRecord.pendingEntries) WHERE \(OutboxRecord.State.pending.condition)") ?? 0
            try FerryMeta.setValue(max(lastApplied, held), for: .lastMutationID, in: db)
        }
    }

    /// Settles mutations inside a transaction the caller runs.
    static func settle(_ seqs: [Int64], state: OutboxRecord.State, reason: String?, now: Int64, in db: Database) throws {
        let settled = try OutboxRecord.all().filter(seqs: seqs).filter(state: .pending).updateAll(
            db,
            [
                OutboxRecord.Columns.state.set(to: state), OutboxRecord.Columns.reason.set(to: reason),
                OutboxRecord.Columns.settledAt.set(to: now), OutboxRecord.Columns.frozen.set(to: nil),
            ])
        if settled != seqs.count {
            throw FerryError(
                .outboxStateMismatch,
                "\(seqs.count - settled) of \(seqs.count) outbox entries were not pending; they were already settled or purged")
        }
    }

    private func settle(_ seqs: [Int64], state: OutboxRecord.State, reason: String?) throws {
        let now = database.wallClock.nowMilliseconds()
        try database.write { db in
            try Self.settle(seqs, state: state, reason: reason, now: now, in: db)
        }
    }

    private func withValues(_ mutation: PendingMutation, _ db: Database) throws -> PendingMutation {
        var statements: [String: Statement] = [:]
        return try withValues(mutation, db, statements: &statements)
    }

    /// ``withValues(_:_:)`` with each table's statement kept in `statements` across a batch.
    private func withValues(_ mutation: PendingMutation, _ db: Database, statements: inout [String: Statement]) throws -> PendingMutation {
        guard mutation.operation == .upsert, let layout = database.layouts[mutation.table] else { return mutation }
        var mutation = mutation
        // The columns by position, bound directly: GRDB's arguments and its lookup of a column by name were
        // most of taking a batch.
        let statement: Statement
        if let cached = statements[mutation.table] {
            statement = cached
        } else {
            statement = try db.cachedStatement(sql: layout.selectRowSQL)
            statements[mutation.table] = statement
        }
        try statement.bind { binder in try binder.bind(mutation.rowID) }
        // Read straight from SQLite's columns: a GRDB `Row` copied every value first.
        var values: [String: DatabaseValue]?
        try statement.forEachRow { row in
            var read = [String: DatabaseValue](minimumCapacity: layout.columns.count)
            for (index, column) in layout.columns.enumerated()
            where mutation.columns?.contains(column) ?? true || column == layout.primaryKey {
                read[column] = row.databaseValue(at: Int32(index))
            }
            values = read
            return false
        }
        guard let values else {
            // The row is gone without a captured delete (a cascade from a
            // pulled delete): what the server should know is that it is gone.
            mutation.operation = .delete
            mutation.columns = nil
            mutation.values = [:]
            return mutation
        }
        mutation.values = values
        return mutation
    }

    /// The first `limit` pending entries, plus every later entry of a
    /// mutation already handed out among them: a mutation id must always be
    /// resent whole, or the server would drop its other half as a duplicate.
    /// Entries in `skipping` (a batch still on the wire) are passed over, as
    /// if settled.
    static func pendingEntries(_ db: Database, limit: Int?, skipping: Set<Int64> = []) throws -> [OutboxEntry] {
        let pending = OutboxRecord.all().filter(state: .pending).order(OutboxRecord.Columns.seq)
        let first = try db.cachedStatement(
            sql: """
                SELECT \(OutboxRecord.entryColumns) FROM \(OutboxRecord.pendingEntries) WHERE \(OutboxRecord.State.pending.condition)
                ORDER BY seq LIMIT ?
                """)
        var entries: [OutboxEntry] = []
        let rows = try Row.fetchCursor(first, arguments: [limit.map { $0 + skipping.count } ?? -1])
        while let row = try rows.next() {
            let entry = try OutboxRecord.entry(at: row)
            if !skipping.contains(entry.seq) { entries.append(entry) }
        }
        if let limit, entries.count > limit { entries.removeLast(entries.count - limit) }
        let handedOut = Set(entries.compactMap(\.mutationID))
        if limit != nil, let last = entries.last, !handedOut.isEmpty {
            entries +=
                try pending
                .filter(OutboxRecord.Columns.seq > last.seq && handedOut.contains(OutboxRecord.Columns.mutationID))
                .fetchAll(db).map(\.entry)
        }
        return entries
    }

    /// No entry pending and no settled notice unsent: a push batch taken
    /// now would be empty. One read, for the push that follows a reply.
    ///
    /// The newest pending entry is looked for, through the index of pending
    /// entries (`ferry_outbox_pending`): settled entries, kept until the app
    /// purges them, are never read. (A scalar subquery: SQLite drops the
    /// order of one under `EXISTS`.)
    static func nothingToPush(_ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT (SELECT 1 FROM \(OutboxRecord.pendingEntries) WHERE \(OutboxRecord.State.pending.condition) ORDER BY seq DESC LIMIT 1) IS NULL
                    AND NOT EXISTS (SELECT 1 FROM ferry_settled_notices)
                    """)) ?? false
    }

    /// The one definition of "pending" (see ``pendingCount()``), cheap
    /// enough to run after every write: rows with pending entries, but a row
    /// inserted and deleted before it was ever pushed, which
    /// ``OutboxCoalescer`` cancels out (nothing handed out, its first open
    /// entry an insert on no server version, its last a delete).
    static func pendingCount(_ db: Database) throws -> Int {
        try SQLRequest<Int>(
            literal: """
                SELECT count(*) FROM (
                    SELECT tbl, row_id, max(mutation_id IS NOT NULL) AS frozen,
                           min(CASE WHEN mutation_id IS NULL THEN seq END) AS first_open,
                           max(CASE WHEN mutation_id IS NULL THEN seq END) AS last_open
                    FROM \(sql: OutboxRecord.pendingEntries) WHERE \(sql: OutboxRecord.State.pending.condition) GROUP BY tbl, row_id) g
                LEFT JOIN ferry_outbox first ON first.seq = g.first_open
                LEFT JOIN ferry_outbox last ON last.seq = g.last_open
                WHERE g.frozen OR NOT (first.op = \(OutboxEntry.Operation.insert.rawValue) AND first.base_version IS NULL
                                       AND last.op = \(OutboxEntry.Operation.delete.rawValue))
                """, cached: true
        ).fetchOne(db) ?? 0
    }

    /// Rejected mutations (a mutation's entries count once; an entry never
    /// handed out counts alone).
    static func rejectedCount(_ db: Database) throws -> Int {
        try OutboxRecord.all().filter(state: .rejected)
            .select(count(distinct: OutboxRecord.Columns.mutationID ?? -OutboxRecord.Columns.seq), as: Int.self)
            .fetchOne(db) ?? 0
    }

    static func jsonArray(_ values: [Int64]) -> String {
        "[" + values.map(String.init).joined(separator: ",") + "]"
    }
}
