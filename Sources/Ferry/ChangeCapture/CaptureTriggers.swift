import FerrySQLite

/// The SQL of the triggers that capture changes to one synced table.
///
/// Pure text generation from a ``TableLayout``, so the exact SQL is testable
/// and comparable with what `sqlite_master` holds (Ferry only rewrites
/// triggers whose text changed).
///
/// Every trigger runs only while `ferry_capturing()` is true: writes that
/// apply server changes switch it off so they never echo into the outbox.
struct CaptureTriggers {
    /// A trigger's name and its full `CREATE TRIGGER` statement.
    struct Definition: Hashable, Sendable {
        var name: String
        var sql: String
    }

    /// Every trigger Ferry installs is named with this prefix.
    static let namePrefix = "ferry_capture_"

    static func definitions(for layout: TableLayout) -> [Definition] {
        let table = layout.table.name
        let quotedTable = SQLText.identifier(table)
        let tableLiteral = SQLText.literal(table)
        let key = SQLText.identifier(layout.primaryKey)

        func scope(_ row: String) -> String {
            switch layout.table.scope {
            case .user: "NULL"
            case .column(let column): "\(row).\(SQLText.identifier(column))"
            }
        }
        func outboxInsert(row: String, operation: String, columns: String) -> String {
            """
            INSERT INTO ferry_outbox(tbl, row_id, op, columns, scope, base_version, hlc) \
            VALUES (\(tableLiteral), \(row).\(key), '\(operation)', \(columns), \(scope(row)), \
            \(KnownVersions.versionSQL(table: tableLiteral, rowID: "\(row).\(key)")), ferry_hlc());
            """
        }

        var definitions: [Definition] = []

        let insertName = namePrefix + table + "_insert"
        definitions.append(
            Definition(
                name: insertName,
                sql: """
                    CREATE TRIGGER \(SQLText.identifier(insertName)) AFTER INSERT ON \(quotedTable) \
                    WHEN ferry_capturing() BEGIN \(outboxInsert(row: "NEW", operation: "insert", columns: "NULL")) END
                    """))

        let valueColumns = layout.valueColumns
        if !valueColumns.isEmpty {
            // COLLATE BINARY: a NOCASE column changed from 'abc' to 'ABC' did change.
            let changed = valueColumns.map { column in
                let quoted = SQLText.identifier(column)
                return "OLD.\(quoted) IS NOT NEW.\(quoted) COLLATE BINARY"
            }
            // '[' || substr(',"a"' || ',"b"', 2) || ']' builds the JSON array of changed names.
            let names = valueColumns.map { column in
                let quoted = SQLText.identifier(column)
                let element = SQLText.literal("," + SQLText.jsonString(column))
                return "CASE WHEN OLD.\(quoted) IS NOT NEW.\(quoted) COLLATE BINARY THEN \(element) ELSE '' END"
            }
            let columnsJSON = "'[' || substr(\(names.joined(separator: " || ")), 2) || ']'"
            let updateName = namePrefix + table + "_update"
            definitions.append(
                Definition(
                    name: updateName,
                    sql: """
                        CREATE TRIGGER \(SQLText.identifier(updateName)) AFTER UPDATE ON \(quotedTable) \
                        WHEN ferry_capturing() AND (\(changed.joined(separator: " OR "))) \
                        BEGIN \(outboxInsert(row: "NEW", operation: "update", columns: columnsJSON)) END
                        """))
        }

        let deleteName = namePrefix + table + "_delete"
        definitions.append(
            Definition(
                name: deleteName,
                sql: """
                    CREATE TRIGGER \(SQLText.identifier(deleteName)) AFTER DELETE ON \(quotedTable) \
                    WHEN ferry_capturing() BEGIN \(outboxInsert(row: "OLD", operation: "delete", columns: "NULL")) END
                    """))

        // A deleted row's attachments go with it: noted here, removed by `AttachmentOwners.sweep` once the row
        // is really gone (a REPLACE deletes and re-inserts it in one statement). Only for rows with attachments.
        if table != AttachmentRecord.databaseTableName {
            let ownerName = namePrefix + table + "_attachments"
            definitions.append(
                Definition(
                    name: ownerName,
                    sql: """
                        CREATE TRIGGER \(SQLText.identifier(ownerName)) AFTER DELETE ON \(quotedTable) \
                        WHEN ferry_capturing() AND EXISTS (SELECT 1 FROM ferry_attachments WHERE tbl = \(tableLiteral) AND row_id = OLD.\(key)) \
                        BEGIN INSERT OR IGNORE INTO ferry_deleted_owners(tbl, row_id) VALUES (\(tableLiteral), OLD.\(key)); END
                        """))
        }

        // The id is the row's identity on every device: it cannot change.
        let keyName = namePrefix + table + "_key"
        let message = SQLText.literal(
            "ferry: the primary key `\(layout.primaryKey)` of synced table `\(table)` cannot change; delete the row and insert a new one")
        definitions.append(
            Definition(
                name: keyName,
                sql: """
                    CREATE TRIGGER \(SQLText.identifier(keyName)) BEFORE UPDATE OF \(key) ON \(quotedTable) \
                    WHEN OLD.\(key) IS NOT NEW.\(key) BEGIN SELECT RAISE(ABORT, \(message)); END
                    """))
        return definitions
    }
}
