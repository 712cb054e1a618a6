import FerryProtocol
import Foundation
import GRDB

/// One row of `ferry_conflicts`: a conflict the server reported (in a push
/// reply or as a notice), until the app resolves or dismisses it.
///
/// ```swift
/// let conflicts = try ConflictRecord.order(ConflictRecord.Columns.id).fetchAll(db).map { try $0.conflict() }
/// ```
struct ConflictRecord: Codable, FetchableRecord, MutablePersistableRecord, Sendable {
    static let databaseTableName = "ferry_conflicts"

    var id: Int64?
    var table: String
    var rowID: String
    var scope: String
    var kind: Conflict.Kind
    var column: String?
    /// The values, as `ColumnValueJSON`.
    var base: String?
    var local: String?
    var server: String?
    var resolution: Conflict.Resolution
    /// 0 for a notice: no mutation of this device's was refused.
    var mutationID: Int64
    /// The row's server version the report came with: a resolution is
    /// based on it, so it never conflicts again.
    var serverVersion: Int64?
    /// For an update lost to a delete: the whole local row, so "mine" can re-create it.
    var rowValues: String?
    /// Unix milliseconds.
    var detectedAt: Int64
    var noticeID: String?
    var overriddenBy: String?
    /// The server's row the report came with (JSON ``ServerRow``).
    var serverRow: String?

    enum CodingKeys: String, CodingKey {
        case id, table = "tbl", rowID = "row_id", scope, kind, column = "column_name", base, local, server, resolution
        case mutationID = "mutation_id", serverVersion = "server_version", rowValues = "row_values"
        case detectedAt = "detected_at", noticeID = "notice_id", overriddenBy = "overridden_by", serverRow = "server_row"
    }

    enum Columns {
        static let id = Column(CodingKeys.id)
        static let scope = Column(CodingKeys.scope)
        static let noticeID = Column(CodingKeys.noticeID)
    }

    mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }

    init(
        _ conflict: Conflict, table: String, rowID: String, scope: String, mutationID: Int64,
        serverVersion: Int64?, serverRow: String?, rowValues: String?, noticeID: String?,
        overriddenBy: String?, detectedAt: Int64
    ) throws {
        self.table = table
        self.rowID = rowID
        self.scope = scope
        kind = conflict.kind
        column = conflict.column
        base = try ColumnValueJSON.encode(conflict.base)
        local = try ColumnValueJSON.encode(conflict.local)
        server = try ColumnValueJSON.encode(conflict.server)
        resolution = conflict.resolution
        self.mutationID = mutationID
        self.serverVersion = serverVersion
        self.rowValues = rowValues
        self.detectedAt = detectedAt
        self.noticeID = noticeID
        self.overriddenBy = overriddenBy
        self.serverRow = serverRow
    }

    /// The conflict as the app sees it.
    func conflict() throws -> SyncConflict {
        SyncConflict(
            id: id ?? 0, table: table, rowID: rowID, scope: scope, kind: kind, column: column,
            base: try ColumnValueJSON.decode(base), mine: try ColumnValueJSON.decode(local),
            theirs: try ColumnValueJSON.decode(server), resolution: resolution, mutationID: mutationID,
            detectedAt: Date(timeIntervalSince1970: Double(detectedAt) / 1000), overriddenBy: overriddenBy,
            serverRow: try ServerRowRestore.decode(serverRow) ?? nil, serverVersion: serverVersion,
            rowValues: try rowValues.map(ColumnValueJSON.decodeRow))
    }
}
