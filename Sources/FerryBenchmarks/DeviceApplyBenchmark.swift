@_spi(Benchmarks) import Ferry
import FerryTesting
import FerryProtocol
import Foundation
import GRDB

/// Scenarios 2 and 7: applying pulled changes on the device, and how that
/// and reads scale with the table.
///
/// Both sides write the same rows into the same kind of table in the same
/// database file (same SQLite build, same pragmas): `item` is synced and
/// written by Ferry's apply path (one transaction, capture off, a savepoint
/// a page, `ferry_rows` versions, the cursor); `plain_item` is not
/// synced and written by plain GRDB upserts. Scenario 2's other plain
/// writes go to `plain_item_saved` and `plain_item_each`, so each table
/// holds the rows of the rounds before, as `item` does.
public struct DeviceApplyBenchmark: Sendable {
    public var pageRows = 1000
    public var rounds = 15
    public var bigTableRows: Int
    public var smallTableRows = 10_000
    public var remoteChanges = 10_000
    public var listQueries = 2000

    public init(bigTableRows: Int = 1_000_000) {
        self.bigTableRows = bigTableRows
    }

    static func schema() -> FerrySchema {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            for table in ["item", "plain_item", "plain_item_saved", "plain_item_each"] {
                try db.execute(
                    sql: """
                        CREATE TABLE \(table) (id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, qty INTEGER NOT NULL, price REAL, note TEXT);
                        CREATE INDEX \(table)_by_name ON \(table)(name);
                        """)
            }
        }
        return FerrySchema(migrator: migrator, syncedTables: [SyncedTable("item")])
    }

    static func open(_ path: String) throws -> FerryDatabase {
        var configuration = FerryConfiguration()
        configuration.longTransactionThreshold = .seconds(600)
        return try FerryDatabase(path: path, schema: schema(), configuration: configuration)
    }

    static func values(_ n: Int, _ generation: Int) -> [String: ColumnValue] {
        [
            "name": .text("item \(n) g\(generation)"), "qty": .integer(Int64(n % 97)), "price": .real(Double(n) * 0.25),
            "note": .text("a note of some forty characters, or so"),
        ]
    }

    static func page(_ ids: some Sequence<Int>, generation: Int, firstVersion: Int64) -> PullPage {
        var version = firstVersion
        let changes = ids.map { n -> RowChange in
            version += 1
            return RowChange(table: "item", rowID: "row-\(n)", version: version, deleted: false, values: values(n, generation))
        }
        return PullPage(scope: "user:bench", changes: changes, cursor: "c\(version)", hasMore: false, reset: false)
    }

    static func upsertSQL(_ table: String) -> String {
        """
        INSERT INTO \(table) (id, name, qty, price, note) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT(id) DO UPDATE SET name = excluded.name, qty = excluded.qty, price = excluded.price, note = excluded.note
        """
    }

    static func upsert(_ change: RowChange, into table: String = "plain_item", _ db: Database) throws {
        let v = change.values
        func sql(_ value: ColumnValue?) -> (any DatabaseValueConvertible)? {
            switch value {
            case .text(let text): text
            case .integer(let integer): integer
            case .real(let real): real
            case .blob(let data): data
            case .null, nil: nil
            }
        }
        try db.cachedStatement(sql: upsertSQL(table)).execute(arguments: [change.rowID, sql(v["name"]), sql(v["qty"]), sql(v["price"]), sql(v["note"])])
    }

    /// Copies the WAL into the database file, untimed, before each timed
    /// write: a write that grows the WAL past SQLite's threshold (1,000
    /// pages) checkpoints it at commit, so without this one side would pay
    /// for the pages the other side wrote before it.
    static func checkpoint(_ writer: any DatabaseWriter) throws {
        try writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
    }

    // MARK: Scenario 2

    public func runPageApply(in directory: URL) throws -> [BenchmarkResult] {
        let database = try Self.open(directory.appendingPathComponent("page-apply.sqlite").path)
        let writer = database.writer
        let clock = ContinuousClock()
        var ferry: [Duration] = [], perRow: [Duration] = [], single: [Duration] = [], savepoints: [Duration] = []
        var version: Int64 = 0
        for round in 0..<rounds {
            // New rows each round, so every side inserts pages of fresh rows into a table holding the
            // rounds before (each plain side has a table of its own, as Ferry's side has `item`).
            let ids = (round * pageRows)..<((round + 1) * pageRows)
            let page = Self.page(ids, generation: round, firstVersion: version)
            version += Int64(pageRows)
            try Self.checkpoint(writer)
            ferry.append(
                try clock.measure {
                    guard try database.applyPulledPage(page, userID: "bench") == pageRows else { throw BenchmarkError("the page did not apply whole") }
                })
            try Self.checkpoint(writer)
            perRow.append(
                try clock.measure {
                    for change in page.changes { try writer.write { db in try Self.upsert(change, into: "plain_item_each", db) } }
                })
            try Self.checkpoint(writer)
            single.append(
                try clock.measure {
                    try writer.write { db in for change in page.changes { try Self.upsert(change, db) } }
                })
            try Self.checkpoint(writer)
            savepoints.append(
                try clock.measure {
                    try writer.write { db in
                        for start in stride(from: 0, to: page.changes.count, by: 100) {
                            try db.inSavepoint {
                                for change in page.changes[start..<min(start + 100, page.changes.count)] {
                                    try Self.upsert(change, into: "plain_item_saved", db)
                                }
                                return .commit
                            }
                        }
                    }
                })
        }
        let f = median(ferry), one = median(single), each = median(perRow), saved = median(savepoints)
        let label = "apply a pulled page of \(pageRows) rows (median of \(rounds))"
        return [
            BenchmarkResult(
                scenario: label + " vs one transaction", ferry: format(f),
                baseline: format(one) + " plain GRDB", ratio: seconds(f) / seconds(one), goal: 1.2, direction: .atMost),
            BenchmarkResult(
                scenario: label + " vs 10 savepoints of 100", ferry: format(f),
                baseline: format(saved) + " plain GRDB", ratio: seconds(f) / seconds(saved), goal: .nan, direction: .atMost),
            BenchmarkResult(
                scenario: label + " vs \(pageRows) transactions", ferry: format(f),
                baseline: format(each) + " plain GRDB", ratio: seconds(f) / seconds(each), goal: .nan, direction: .atMost),
        ]
    }

    // MARK: Scenario 7

    public func runScale(in directory: URL) throws -> [BenchmarkResult] {
        let big = try Self.open(directory.appendingPathComponent("scale-big.sqlite").path)
        let small = try Self.open(directory.appendingPathComponent("scale-small.sqlite").path)
        try seed(big, rows: bigTableRows)
        try seed(small, rows: smallTableRows)
        let clock = ContinuousClock()

        // 10k remote changes in pages of 1,000: half update rows the device
        // has, half insert new ones, as an incremental sync brings them.
        // The same pages as plain GRDB upserts into `plain_item` (seeded with the same rows), each page
        // in one transaction: how SQLite itself scales with the table, for comparison.
        var bigTimes: [Duration] = [], smallTimes: [Duration] = []
        var plainBigTimes: [Duration] = [], plainSmallTimes: [Duration] = []
        for round in 0..<3 {
            for (database, rows, isBig) in [(big, bigTableRows, true), (small, smallTableRows, false)] {
                var elapsed = Duration.zero, plainElapsed = Duration.zero
                var version = Int64(10_000_000 * (round + 1))
                for pageIndex in 0..<(remoteChanges / pageRows) {
                    let half = pageRows / 2
                    let updates = (0..<half).map { (pageIndex * half + $0 * 7 + round * 13) % rows }
                    let inserts = (0..<half).map { rows + round * remoteChanges + pageIndex * half + $0 }
                    let page = Self.page(updates + inserts, generation: round + 1, firstVersion: version)
                    version += Int64(pageRows)
                    // Each side's time includes copying the pages it wrote into the database file: a
                    // transaction that writes more than 1,000 pages checkpoints at commit, one that writes
                    // fewer leaves them to the next, which would pay for them otherwise.
                    try Self.checkpoint(database.writer)
                    elapsed += try clock.measure {
                        _ = try database.applyPulledPage(page, userID: "bench")
                        try Self.checkpoint(database.writer)
                    }
                    plainElapsed += try clock.measure {
                        try database.writer.write { db in for change in page.changes { try Self.upsert(change, db) } }
                        try Self.checkpoint(database.writer)
                    }
                }
                if isBig { bigTimes.append(elapsed) } else { smallTimes.append(elapsed) }
                if isBig { plainBigTimes.append(plainElapsed) } else { plainSmallTimes.append(plainElapsed) }
            }
        }
        let b = median(bigTimes), s = median(smallTimes)
        let plainBig = median(plainBigTimes), plainSmall = median(plainSmallTimes)

        // A 50-row list query, synced table against unsynced, same rows.
        var synced: [Duration] = [], plain: [Duration] = []
        try small.writer.write { db in try db.execute(sql: "DELETE FROM plain_item; INSERT INTO plain_item SELECT * FROM item") }
        let rowCount = try small.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM item") ?? 0 }
        var generator = SplitMix64(seed: 7)
        for index in 0..<(listQueries * 2) {
            let table = index % 2 == 0 ? "item" : "plain_item"
            let offset = Int.random(in: 0..<max(1, rowCount - 50), using: &generator)
            let elapsed = try clock.measure {
                _ = try small.writer.read { db in
                    try Row.fetchAll(db, sql: "SELECT id, name, qty, price, note FROM \(table) ORDER BY name LIMIT 50 OFFSET ?", arguments: [offset])
                }
            }
            if table == "item" { synced.append(elapsed) } else { plain.append(elapsed) }
        }
        let syncedP95 = percentile(synced, 0.95), plainP95 = percentile(plain, 0.95)
        return [
            BenchmarkResult(
                scenario:
                    "apply \(countLabel(remoteChanges)) remote changes into \(countLabel(bigTableRows)) rows vs \(countLabel(smallTableRows)) rows, each page checkpointed (median of 3)",
                ferry: format(b), baseline: format(s), ratio: seconds(b) / seconds(s), goal: 1.3, direction: .atMost),
            BenchmarkResult(
                scenario: "the same changes as plain GRDB upserts (a transaction a page), into \(countLabel(bigTableRows)) rows vs \(countLabel(smallTableRows)) rows",
                ferry: format(plainBig), baseline: format(plainSmall), ratio: seconds(plainBig) / seconds(plainSmall), goal: .nan,
                direction: .atMost),
            BenchmarkResult(
                scenario: "50-row list query p95, synced vs unsynced table (\(countLabel(rowCount)) rows, n=\(listQueries))",
                ferry: format(syncedP95), baseline: format(plainP95) + " plain table",
                ratio: seconds(syncedP95) / seconds(plainP95), goal: 1.05, direction: .atMost),
        ]
    }

    /// Rows that came from the server: written with capture off, with their
    /// known versions in `ferry_rows`, in SQL (a pull of 1M rows would take minutes).
    private func seed(_ database: FerryDatabase, rows: Int) throws {
        try database.writeAsServer { db in
            try db.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
                    INSERT INTO item (id, name, qty, price, note)
                    SELECT 'row-' || i, 'item ' || i || ' g0', i % 97, i * 0.25, 'a note of some forty characters, or so' FROM n
                    """, arguments: [rows])
            try db.execute(sql: "INSERT INTO ferry_rows (tbl, row_id, version) SELECT 'item', id, 1 FROM item")
            try db.execute(sql: "INSERT INTO plain_item SELECT * FROM item")
        }
    }
}
