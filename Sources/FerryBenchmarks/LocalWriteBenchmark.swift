import Ferry
import Foundation
import GRDB

/// Scenario 1: what change capture costs a local write.
///
/// Two identical tables in one database file (same SQLite build, same
/// pragmas): `note` is synced, so every write also appends its outbox entry
/// through Ferry's triggers; `plain_note` is not, and is written through plain
/// GRDB. Runs alternate between the two so machine noise hits both alike.
public struct LocalWriteBenchmark: Sendable {
    public var bulkRows: Int
    public var bulkRounds: Int
    public var singleRowTransactions: Int

    public init(bulkRows: Int = 100_000, bulkRounds: Int = 3, singleRowTransactions: Int = 3_000) {
        self.bulkRows = bulkRows
        self.bulkRounds = bulkRounds
        self.singleRowTransactions = singleRowTransactions
    }

    struct Row: Sendable {
        var id: String
        var title: String
        var body: String
        var score: Double
        var createdAt: Int64
    }

    static func makeRows(_ count: Int, prefix: String) -> [Row] {
        (0..<count).map { n in
            Row(
                id: UUID().uuidString, title: "\(prefix) note \(n)",
                body: String(repeating: "lorem ipsum ", count: 8), score: Double(n) * 0.5,
                createdAt: 1_700_000_000_000 + Int64(n))
        }
    }

    static func schema() -> FerrySchema {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            for table in ["note", "plain_note"] {
                try db.execute(
                    sql: """
                        CREATE TABLE \(table) (id TEXT PRIMARY KEY NOT NULL, title TEXT NOT NULL, body TEXT,
                                               score REAL, createdAt INTEGER NOT NULL)
                        """)
            }
        }
        return FerrySchema(migrator: migrator, syncedTables: [SyncedTable("note")])
    }

    static func insert(_ rows: ArraySlice<Row>, into table: String, _ db: Database) throws {
        let statement = try db.cachedStatement(sql: "INSERT INTO \(table)(id, title, body, score, createdAt) VALUES (?, ?, ?, ?, ?)")
        for row in rows {
            try statement.execute(arguments: [row.id, row.title, row.body, row.score, row.createdAt])
        }
    }

    public func run(in directory: URL) throws -> [BenchmarkResult] {
        var configuration = FerryConfiguration()
        configuration.longTransactionThreshold = .seconds(60)  // the bulk insert is long on purpose
        let database = try FerryDatabase(
            path: directory.appendingPathComponent("local-writes.sqlite").path,
            schema: Self.schema(), configuration: configuration)
        let clock = ContinuousClock()

        var ferryBulk: [Duration] = []
        var plainBulk: [Duration] = []
        for round in 0..<bulkRounds {
            let rows = Self.makeRows(bulkRows, prefix: "bulk\(round)")
            // Alternate which side goes first.
            let order = round % 2 == 0 ? ["note", "plain_note"] : ["plain_note", "note"]
            for table in order {
                let elapsed: Duration
                if table == "note" {
                    elapsed = try clock.measure { try database.write { db in try Self.insert(rows[...], into: "note", db) } }
                    ferryBulk.append(elapsed)
                } else {
                    elapsed = try clock.measure { try database.writer.write { db in try Self.insert(rows[...], into: "plain_note", db) } }
                    plainBulk.append(elapsed)
                }
            }
            // Keep the outbox from growing across rounds, as a syncing app would.
            try database.writer.write { db in try db.execute(sql: "DELETE FROM ferry_outbox") }
        }

        var ferrySingle: [Duration] = []
        var plainSingle: [Duration] = []
        let rows = Self.makeRows(singleRowTransactions * 2, prefix: "single")
        for n in 0..<singleRowTransactions {
            let ferryRow = rows[2 * n...2 * n]
            let plainRow = rows[2 * n + 1...2 * n + 1]
            if n % 2 == 0 {
                ferrySingle.append(try clock.measure { try database.write { db in try Self.insert(ferryRow, into: "note", db) } })
                plainSingle.append(try clock.measure { try database.writer.write { db in try Self.insert(plainRow, into: "plain_note", db) } })
            } else {
                plainSingle.append(try clock.measure { try database.writer.write { db in try Self.insert(plainRow, into: "plain_note", db) } })
                ferrySingle.append(try clock.measure { try database.write { db in try Self.insert(ferryRow, into: "note", db) } })
            }
        }

        let bulkFerry = median(ferryBulk), bulkPlain = median(plainBulk)
        let singleFerry = DurationSummary(ferrySingle), singlePlain = DurationSummary(plainSingle)
        return [
            BenchmarkResult(
                scenario: "local-writes: \(bulkRows) inserts, one transaction (median of \(bulkRounds))",
                ferry: format(bulkFerry), baseline: format(bulkPlain) + " plain GRDB",
                ratio: seconds(bulkFerry) / seconds(bulkPlain), goal: 1.5, direction: .atMost),
            BenchmarkResult(
                scenario: "local-writes: single-row transactions, p50 (n=\(singleRowTransactions))",
                ferry: format(singleFerry.p50), baseline: format(singlePlain.p50) + " plain GRDB",
                ratio: seconds(singleFerry.p50) / seconds(singlePlain.p50), goal: 1.3, direction: .atMost),
            BenchmarkResult(
                scenario: "local-writes: single-row transactions, p99 (n=\(singleRowTransactions))",
                ferry: format(singleFerry.p99), baseline: format(singlePlain.p99) + " plain GRDB",
                ratio: seconds(singleFerry.p99) / seconds(singlePlain.p99), goal: 1.3, direction: .atMost),
        ]
    }
}
