import FerrySQLite
import GRDB

/// Attachments follow their row: when a row with attachments is deleted on
/// this device, its attachments' metadata is deleted too, in the same
/// transaction and captured like any delete, so every device and the
/// server drop them (the server's blob then goes with the tombstone's
/// collection); ``Attachments/maintain()`` removes the files.
///
/// A capture trigger notes each deleted row that has attachments in
/// `ferry_deleted_owners`; every write Ferry runs ends with ``sweep(_:)``,
/// which removes the attachments of the noted rows that are really gone (a
/// `REPLACE` deletes and re-inserts a row in one statement, and keeps its
/// attachments). A write made directly on the GRDB writer is swept by the
/// next write Ferry runs, at the latest the sync's push.
///
/// A delete pulled from the server removes the row's attachments locally
/// (``PageApplier``): the deleting device sent their deletes.
///
/// ```swift
/// try database.write { db in try db.execute(sql: "DELETE FROM note WHERE id = ?", arguments: [id]) }
/// try database.attachments.list(table: "note", row: id)   // []
/// ```
enum AttachmentOwners {
    /// Deletes the attachments of rows noted as deleted that are still
    /// gone, and forgets the notes. Runs inside the caller's transaction.
    static func sweep(_ db: Database) throws {
        let noted = try Row.fetchAll(db.cachedStatement(sql: "SELECT tbl, row_id FROM ferry_deleted_owners"))
        guard !noted.isEmpty else { return }
        for row in noted {
            let table: String = row["tbl"], rowID: String = row["row_id"]
            guard try !exists(table: table, rowID: rowID, db) else { continue }
            try remove(table: table, rowID: rowID, db)
        }
        try db.execute(sql: "DELETE FROM ferry_deleted_owners")
    }

    /// Deletes the metadata of every attachment of a row.
    static func remove(table: String, rowID: String, _ db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM ferry_attachments WHERE tbl = ? AND row_id = ?").execute(arguments: [table, rowID])
    }

    private static func exists(table: String, rowID: String, _ db: Database) throws -> Bool {
        // The table's primary key, as the capture trigger used it.
        guard try db.tableExists(table), let key = try db.primaryKey(table).columns.first else { return false }
        return try Bool.fetchOne(
            db, sql: "SELECT 1 FROM \(SQLText.identifier(table)) WHERE \(SQLText.identifier(key)) = ?",
            arguments: [rowID]) ?? false
    }
}
