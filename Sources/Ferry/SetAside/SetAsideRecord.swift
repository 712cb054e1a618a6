import FerryProtocol
import GRDB

/// One row of `ferry_set_aside`: a pulled row that could not be applied (a
/// constraint, a type), kept with its values and retried after later pages.
///
/// ```swift
/// let held = try SetAsideRecord.filter(SetAsideRecord.Columns.scope == scope).fetchAll(db)
/// ```
struct SetAsideRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "ferry_set_aside"

    var table: String
    var rowID: String
    var scope: String
    var version: Int64
    var deleted: Bool
    /// The pulled values, as `ColumnValueJSON`.
    var rowValues: String
    var reason: String
    /// Unix milliseconds.
    var setAsideAt: Int64

    enum CodingKeys: String, CodingKey {
        case table = "tbl", rowID = "row_id", scope, version, deleted, rowValues = "row_values", reason
        case setAsideAt = "set_aside_at"
    }

    enum Columns {
        static let table = Column(CodingKeys.table)
        static let rowID = Column(CodingKeys.rowID)
        static let scope = Column(CodingKeys.scope)
        static let version = Column(CodingKeys.version)
        static let reason = Column(CodingKeys.reason)
        static let setAsideAt = Column(CodingKeys.setAsideAt)
    }

    /// The pulled change, to apply again.
    func change() throws -> RowChange {
        RowChange(
            table: table, rowID: rowID, version: version, deleted: deleted,
            values: try ColumnValueJSON.decodeRow(rowValues))
    }

    /// The row as the app sees it.
    var row: SetAsideRow {
        SetAsideRow(table: table, rowID: rowID, scope: scope, version: version, reason: reason)
    }

    /// Whether any row is set aside: read by every page (and live page), so
    /// from a cached statement.
    static func anyHeld(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM ferry_set_aside)")) ?? false
    }
}
