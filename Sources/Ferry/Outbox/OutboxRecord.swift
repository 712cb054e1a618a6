import FerryProtocol
import Foundation
import GRDB

/// One row of `ferry_outbox`: a captured write and where it stands.
///
/// The capture triggers insert these rows (in SQL, in the app's own
/// transaction); everything else reads and settles them through this record.
///
/// ```swift
/// let rejected = try OutboxRecord.filter(OutboxRecord.Columns.state == OutboxRecord.State.rejected).fetchAll(db)
/// ```
struct OutboxRecord: FetchableRecord, TableRecord, Sendable {
    static let databaseTableName = "ferry_outbox"

    /// Where an entry stands. New entries are `pending` (the column's default).
    enum State: String, DatabaseValueConvertible, Sendable {
        /// Not yet acknowledged: it is pushed (again) at the next sync.
        case pending
        /// The server acknowledged it; kept for the outbox retention, then purged.
        case acknowledged
        /// Set aside with a reason: never sent again unless resent.
        case rejected

        /// `state = '<state>'`, the state written as a literal: SQLite uses
        /// the partial index of pending entries (`ferry_outbox_pending`) for
        /// a literal, and for a bound value only by preparing the statement
        /// again at each run.
        ///
        /// ```swift
        /// "SELECT count(*) FROM ferry_outbox WHERE \(OutboxRecord.State.pending.condition)"
        /// ```
        var condition: String { "state = '\(rawValue)'" }
    }

    /// `ferry_outbox INDEXED BY ferry_outbox_pending`: the outbox read
    /// through its index of pending entries, for the sync's statements that
    /// pick them (their `WHERE` names ``State/condition`` of `pending`).
    ///
    /// Named, not left to the planner: statistics SQLite took while most
    /// entries were pending (an offline backlog, then `PRAGMA optimize`)
    /// rate the index no better than the table, and after the entries
    /// settle it would read every one again. A statement whose `WHERE`
    /// does not imply the index's condition fails to prepare instead of
    /// reading the whole outbox.
    ///
    /// ```swift
    /// "SELECT seq FROM \(OutboxRecord.pendingEntries) WHERE \(OutboxRecord.State.pending.condition) ORDER BY seq"
    /// ```
    static let pendingEntries = "ferry_outbox INDEXED BY ferry_outbox_pending"

    enum Columns {
        static let seq = Column("seq")
        static let table = Column("tbl")
        static let rowID = Column("row_id")
        static let operation = Column("op")
        static let columns = Column("columns")
        static let scope = Column("scope")
        static let baseVersion = Column("base_version")
        static let hlc = Column("hlc")
        static let mutationID = Column("mutation_id")
        static let state = Column("state")
        static let reason = Column("reason")
        static let settledAt = Column("settled_at")
        static let serverRow = Column("server_row")
        static let refusedValues = Column("refused_values")
        /// On a handed-out mutation's first entry: the values it carries,
        /// frozen when its id was given (``Outbox``), until it settles.
        static let frozen = Column("frozen")
    }

    var entry: OutboxEntry
    var state: State
    var reason: String?
    var settledAt: Int64?
    /// For a rejected entry: the server's row at the rejection (JSON
    /// ``ServerRow``, or `absent`), restored when it is discarded.
    var serverRow: String?
    /// For a rejected entry: the values its mutation carried (JSON).
    var refusedValues: String?

    init(row: Row) throws {
        let seq: Int64 = row[Columns.seq]
        let columns = try Self.columns(row[Columns.columns])
        let operation = try Self.operation(row[Columns.operation], seq: seq)
        let state: String = row[Columns.state]
        guard let known = State(rawValue: state) else {
            throw FerryError(.outboxStateMismatch, "outbox entry \(seq) has unknown state `\(state)`")
        }
        entry = OutboxEntry(
            seq: seq, table: row[Columns.table], rowID: row[Columns.rowID], operation: operation,
            columns: columns, scope: row[Columns.scope], baseVersion: row[Columns.baseVersion],
            hlc: HLCTimestamp(rawValue: row[Columns.hlc]), mutationID: row[Columns.mutationID])
        self.state = known
        reason = row[Columns.reason]
        settledAt = row[Columns.settledAt]
        serverRow = row[Columns.serverRow]
        refusedValues = row[Columns.refusedValues]
    }
}

extension OutboxRecord {
    /// The columns of an entry's row read by ``entry(at:)``, in its order.
    static let entryColumns = "seq, tbl, row_id, op, columns, scope, base_version, hlc, mutation_id"

    /// The entry of a row selected with ``entryColumns``, read by position: a long drain reads its
    /// whole outbox, and reading each column by name, through a record, was a fifth of taking a batch.
    static func entry(at row: Row) throws -> OutboxEntry {
        let seq: Int64 = row[0]
        return OutboxEntry(
            seq: seq, table: row[1], rowID: row[2], operation: try operation(row[3], seq: seq),
            columns: try columns(row[4]), scope: row[5], baseVersion: row[6],
            hlc: HLCTimestamp(rawValue: row[7]), mutationID: row[8])
    }

    fileprivate static func columns(_ json: String?) throws -> Set<String>? {
        guard let json else { return nil }
        return Set(try JSONDecoder().decode([String].self, from: Data(json.utf8)))
    }

    fileprivate static func operation(_ op: String, seq: Int64) throws -> OutboxEntry.Operation {
        guard let operation = OutboxEntry.Operation(rawValue: op) else {
            throw FerryError(.outboxStateMismatch, "outbox entry \(seq) has unknown operation `\(op)`")
        }
        return operation
    }
}

extension DerivableRequest<OutboxRecord> {
    /// Entries in `state` (a literal: ``OutboxRecord/State/condition``).
    func filter(state: OutboxRecord.State) -> Self {
        filter(sql: state.condition)
    }

    /// The entries numbered `seqs`, however many (one bound JSON array,
    /// not one variable per entry).
    func filter(seqs: [Int64]) -> Self {
        filter(sql: "seq IN (SELECT value FROM json_each(?))", arguments: [Outbox.jsonArray(seqs)])
    }

    /// The entries of one row.
    func filter(row: RowKey) -> Self {
        filter(OutboxRecord.Columns.table == row.table && OutboxRecord.Columns.rowID == row.rowID)
    }
}
