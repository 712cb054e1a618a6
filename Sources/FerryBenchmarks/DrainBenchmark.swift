import Ferry
import FerryHTTPClient
import FerryProtocol
import FerryServer
import Foundation
import GRDB

/// Scenario 4: a device drains its pending mutations (rows written offline)
/// to a `ferry-server` process over loopback, in batches of 1,000, against
/// the server store's direct insert of the same rows: one transaction per
/// 1,000 rows straight into its `rows` table, the cells' JSON encoded before
/// the clock starts, with the store's own pragmas.
public struct DrainBenchmark: Sendable {
    public var rows: Int
    public var batch = 1000

    public init(rows: Int = 100_000) {
        self.rows = rows
    }

    public func run(in directory: URL) async throws -> [BenchmarkResult] {
        let server = try ServerRoundTripBenchmark.startServer(in: directory, name: "drain-server")
        defer { server.process.terminate(); server.process.waitUntilExit() }
        var configuration = FerryConfiguration()
        configuration.longTransactionThreshold = .seconds(600)
        let device = try FerryDatabase(
            path: directory.appendingPathComponent("drain-device.sqlite").path,
            schema: InitialSyncBenchmark.schema(), configuration: configuration)
        try await device.write { [rows] db in
            let insert = try db.makeStatement(sql: "INSERT INTO item(id, name, qty, price, note) VALUES (?, ?, ?, ?, ?)")
            for index in 0..<rows {
                try insert.execute(arguments: ["row-\(index)", "item \(index)", index, Double(index) * 0.25, "note \(index)"])
            }
        }
        var sync = SyncConfiguration(userID: "bench")
        sync.pushBatchSize = batch
        let engine = try SyncEngine(database: device, transport: HTTPSyncTransport(baseURL: server.url), configuration: sync, token: server.token)
        let clock = ContinuousClock()
        var summary: SyncSummary?
        let drainTime = try await clock.measure { summary = try await engine.sync() }
        guard let summary, summary.pushed == rows else { throw BenchmarkError("the drain pushed \(summary?.pushed ?? 0) of \(rows) rows") }

        // Baseline: the same rows into a fresh server store's table.
        let data = directory.appendingPathComponent("drain-direct")
        try await SQLiteSyncStore(directory: data).close()
        var grdb = Configuration()
        grdb.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        let pool = try DatabasePool(path: data.appendingPathComponent(SQLiteSyncStore.fileName).path, configuration: grdb)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let stamp = HLCTimestamp(wallMilliseconds: Int64(Date().timeIntervalSince1970 * 1000), counter: 0)
        let encoded: [(String, String)] = try (0..<rows).map { index in
            let version = Int64(index + 1)
            let cells: [String: StoredCellJSON] = [
                "id": StoredCellJSON(clientID: "bench:c", hlc: stamp, value: .text("row-\(index)"), version: version),
                "name": StoredCellJSON(clientID: "bench:c", hlc: stamp, value: .text("item \(index)"), version: version),
                "qty": StoredCellJSON(clientID: "bench:c", hlc: stamp, value: .integer(Int64(index)), version: version),
                "price": StoredCellJSON(clientID: "bench:c", hlc: stamp, value: .real(Double(index) * 0.25), version: version),
                "note": StoredCellJSON(clientID: "bench:c", hlc: stamp, value: .text("note \(index)"), version: version),
            ]
            return ("row-\(index)", String(decoding: try encoder.encode(cells), as: UTF8.self))
        }
        let directTime = try await clock.measure {
            for start in stride(from: 0, to: rows, by: batch) {
                try await pool.write { [batch] db in
                    let insert = try db.cachedStatement(
                        sql: """
                            INSERT INTO rows (scope, tbl, row_id, version, deleted, client_id, changed_at, cells)
                            VALUES ('user:bench', 'item', ?, ?, 0, 'bench:c', 0, ?)
                            """)
                    for index in start..<min(start + batch, encoded.count) {
                        try insert.execute(arguments: [encoded[index].0, index + 1, encoded[index].1])
                    }
                }
            }
        }
        try pool.close()
        let drainRate = Double(rows) / seconds(drainTime), directRate = Double(rows) / seconds(directTime)
        return [
            BenchmarkResult(
                scenario: "drain \(countLabel(rows)) pending mutations over loopback vs the server store's direct insert",
                ferry: String(
                    format: "%.0f rows/s (%.1f s waiting for the server, %.1f s in the database, %ld rows pulled back)",
                    drainRate, seconds(summary.waitingForServer), seconds(summary.inDatabase), summary.pulled),
                baseline: String(format: "%.0f rows/s", directRate),
                ratio: drainRate / directRate, goal: 0.5, direction: .atLeast
            )
        ]
    }
}
