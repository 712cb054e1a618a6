import Foundation
import GRDB

/// A deterministic, diff-friendly description of a database schema: tables,
/// columns, foreign keys, indexes, triggers and views, sorted by name.
///
/// Export one per shipped schema version and commit it (the idea of Room's
/// `exportSchema`): a change to a migration shows up as a diff in review, and
/// ``MigrationTester`` compares migrated databases with fresh installs by it.
///
/// ```swift
/// let snapshot = try database.read(SchemaSnapshot.init)
/// try snapshot.text.write(to: URL(fileURLWithPath: "schemas/\(schema.version!).schema.txt"),
///                         atomically: true, encoding: .utf8)
/// ```
public struct SchemaSnapshot: Sendable, Hashable, CustomStringConvertible {
    /// The last applied app migration, or `nil` for an unmigrated database.
    public var version: String?
    /// One line per schema fact, sorted so equal schemas give equal text.
    public var lines: [String]

    /// Reads the schema of `db`.
    ///
    /// - parameter db: a connection to the database to read.
    /// - parameter includingFerryObjects: include Ferry's own tables and the
    ///   capture triggers. Off by default: app snapshot files then change only
    ///   when the app's schema does, not when Ferry is upgraded.
    public init(_ db: Database, includingFerryObjects: Bool = false) throws {
        let hasMigrations = try db.tableExists("grdb_migrations")
        version =
            hasMigrations
            ? try String.fetchOne(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid DESC LIMIT 1")
            : nil

        // Each table, then its indexes (UNIQUE constraints' automatic ones included) and triggers; views last.
        let objects = try Row.fetchAll(
            db,
            sql: """
                SELECT type, name, tbl_name, sql FROM sqlite_master
                WHERE (name NOT LIKE 'sqlite\\_%' ESCAPE '\\' OR type = 'index') AND tbl_name <> 'grdb_migrations'
                ORDER BY type = 'view', tbl_name, CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 ELSE 2 END, name
                """
        ).filter { row in
            let name: String = row["name"]
            let table: String = row["tbl_name"]
            return includingFerryObjects
                || !(name.lowercased().hasPrefix("ferry_") || table.lowercased().hasPrefix("ferry_"))
        }
        var lines: [String] = []
        for object in objects {
            let type: String = object["type"]
            let name: String = object["name"]
            let table: String = object["tbl_name"]
            let sql: String? = object["sql"]
            switch type {
            case "table":
                lines += try Self.describeTable(name, db)
                // The stored SQL keeps what the pragmas do not show: CHECK, COLLATE, AUTOINCREMENT, generated columns.
                if let sql { lines.append("  sql: \(Self.normalize(sql))") }
            case "index":
                lines += try Self.describeIndex(name, on: table, sql: sql, db)
                if let sql { lines.append("  sql: \(Self.normalize(sql))") }
            case "trigger":
                lines.append("trigger \(name) on \(table): \(Self.normalize(sql ?? ""))")
            case "view":
                lines.append("view \(name): \(Self.normalize(sql ?? ""))")
            default:
                continue
            }
        }
        self.lines = lines
    }

    /// The snapshot as file contents.
    public var text: String {
        (["# Ferry schema snapshot", "version: \(version ?? "none")"] + lines).joined(separator: "\n") + "\n"
    }

    public var description: String { text }

    /// Parses the text of a snapshot file.
    public init(text: String) {
        var version: String?
        var lines: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) {
            if line.hasPrefix("#") { continue }
            if line.hasPrefix("version: ") {
                let value = String(line.dropFirst("version: ".count))
                version = value == "none" ? nil : value
            } else {
                lines.append(line)
            }
        }
        self.version = version
        self.lines = lines
    }

    /// The lines only in `self` (`-`) and only in `other` (`+`); empty when the schemas match.
    public func difference(from other: SchemaSnapshot) -> [String] {
        let mine = Set(lines), theirs = Set(other.lines)
        return lines.filter { !theirs.contains($0) }.map { "- " + $0 }
            + other.lines.filter { !mine.contains($0) }.map { "+ " + $0 }
    }

    private static func describeTable(_ name: String, _ db: Database) throws -> [String] {
        var options: [String] = []
        if let info = try Row.fetchOne(
            db, sql: "SELECT wr, strict FROM pragma_table_list WHERE name = ? AND schema = 'main'",
            arguments: [name])
        {
            if info["wr"] as Int == 1 { options.append("WITHOUT ROWID") }
            if info["strict"] as Int == 1 { options.append("STRICT") }
        }
        var lines = ["table \(name)" + (options.isEmpty ? "" : " " + options.joined(separator: " "))]
        for column in try Row.fetchAll(db, sql: "SELECT * FROM pragma_table_xinfo(?) ORDER BY cid", arguments: [name]) {
            var parts = ["  column \(column["name"] as String)", (column["type"] as String).uppercased()]
            if column["notnull"] as Int == 1 { parts.append("NOT NULL") }
            if let defaultValue: String = column["dflt_value"] { parts.append("DEFAULT \(defaultValue)") }
            let pk: Int = column["pk"]
            if pk > 0 { parts.append("PRIMARY KEY(\(pk))") }
            let hidden: Int = column["hidden"]
            if hidden != 0 { parts.append("HIDDEN(\(hidden))") }
            lines.append(parts.filter { !$0.isEmpty }.joined(separator: " "))
        }
        for key in try Row.fetchAll(db, sql: "SELECT * FROM pragma_foreign_key_list(?) ORDER BY id, seq", arguments: [name]) {
            let to: String? = key["to"]
            lines.append("  foreign key \(key["from"] as String) -> \(key["table"] as String)(\(to ?? "")) on update \(key["on_update"] as String) on delete \(key["on_delete"] as String)")
        }
        return lines
    }

    private static func describeIndex(_ name: String, on table: String, sql: String?, _ db: Database) throws -> [String] {
        guard let info = try Row.fetchOne(db, sql: "SELECT * FROM pragma_index_list(?) WHERE name = ?", arguments: [table, name]) else {
            return []
        }
        let columns = try Row.fetchAll(
            db, sql: "SELECT name, desc, coll FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno",
            arguments: [name]
        ).map { column -> String in
            let columnName: String? = column["name"]
            return (columnName ?? "<expression>") + (column["desc"] as Int == 1 ? " DESC" : "") + " COLLATE \(column["coll"] as String)"
        }
        var line = "index \(name) on \(table)(\(columns.joined(separator: ", ")))"
        if info["unique"] as Int == 1 { line += " UNIQUE" }
        if info["partial"] as Int == 1, let sql, let whereRange = sql.range(of: " WHERE ", options: [.caseInsensitive, .backwards]) {
            line += " WHERE " + normalize(String(sql[whereRange.upperBound...]))
        }
        return [line]
    }

    /// Collapses whitespace so formatting differences in stored SQL do not count.
    static func normalize(_ sql: String) -> String {
        sql.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }
}
