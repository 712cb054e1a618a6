import GRDB

/// One row of `ferry_row_fetches`: a row to read back from the server
/// (`GET /v1/rows`) at the next sync, because a refused edit of it was
/// discarded and no reply carried the server's version of it.
///
/// ```swift
/// try RowFetchRecord(table: "note", rowID: "n1", scope: nil).insert(db, onConflict: .replace)
/// ```
struct RowFetchRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "ferry_row_fetches"

    var table: String
    var rowID: String
    /// `nil`: the user's own scope.
    var scope: String?

    enum CodingKeys: String, CodingKey {
        case table = "tbl", rowID = "row_id", scope
    }
}
