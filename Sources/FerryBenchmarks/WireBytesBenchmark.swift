import Ferry
import FerryHTTPClient
import Foundation
import GRDB

/// Scenario 11: what a first sync costs on the wire. A fresh device pulls
/// every row of a seeded scope through a TCP relay that counts the bytes
/// each way, once asking for compressed answers and once not; the baseline
/// is the size of the same rows in a plain SQLite file (one table, no
/// index but the key, vacuumed), what the rows take at rest on a device.
///
/// ```sh
/// swift run -c release ferry-bench wire-bytes
/// ```
public struct WireBytesBenchmark: Sendable {
    public var rows: Int

    public init(rows: Int = 100_000) {
        self.rows = rows
    }

    public func run(in directory: URL) async throws -> [BenchmarkResult] {
        let data = directory.appendingPathComponent("wire-server-\(rows)").path
        try await InitialSyncBenchmark.seedServer(data: data, rows: rows)
        let server = try ServerRoundTripBenchmark.startServer(in: directory, name: "wire-server-\(rows)")
        defer { server.process.terminate(); server.process.waitUntilExit() }
        guard let port = server.url.port else { throw BenchmarkError("the server URL has no port: \(server.url)") }

        var wire: [Bool: Int] = [:]
        var device = ""
        for compression in [true, false] {
            let proxy = try ByteCountingProxy(target: port)
            defer { proxy.stop() }
            let path = directory.appendingPathComponent("wire-device-\(compression).sqlite").path
            let database = try FerryDatabase(path: path, schema: InitialSyncBenchmark.schema())
            var configuration = SyncConfiguration(userID: "bench")
            configuration.periodicInterval = nil
            let engine = try SyncEngine(
                database: database,
                transport: HTTPSyncTransport(
                    baseURL: URL(string: "http://127.0.0.1:\(proxy.port)")!, requestTimeout: .seconds(600), compression: compression),
                configuration: configuration, token: server.token)
            let summary = try await engine.sync()
            guard summary.pulled == rows else { throw BenchmarkError("the device pulled \(summary.pulled) of \(rows) rows") }
            wire[compression] = proxy.counts.toServer + proxy.counts.toClient
            device = path
        }
        let atRest = try Self.plainFileSize(of: device, in: directory)
        let label = rows >= 1_000_000 ? "\(rows / 1_000_000)M" : "\(rows / 1000)k"
        let compressed = wire[true] ?? 0, plain = wire[false] ?? 0
        let mib = { (bytes: Int) in String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
        return [
            BenchmarkResult(
                scenario: "initial sync, \(label) rows: bytes on the wire with compression (both ways, headers included)",
                ferry: "\(mib(compressed)) (uncompressed: \(mib(plain)), \(String(format: "%.2f", Double(plain) / Double(atRest)))× the file)",
                baseline: "\(mib(atRest)) (the rows in a plain SQLite file)",
                ratio: Double(compressed) / Double(atRest), goal: 1.0, direction: .atMost)
        ]
    }

    /// The bytes of a SQLite file holding only `item`'s rows of the device
    /// at `path`, vacuumed.
    static func plainFileSize(of path: String, in directory: URL) throws -> Int {
        let plainPath = directory.appendingPathComponent("wire-plain.sqlite").path
        try? FileManager.default.removeItem(atPath: plainPath)
        let plain = try DatabaseQueue(path: plainPath)
        try plain.inDatabase { db in
            try db.execute(sql: "CREATE TABLE item (id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, qty INTEGER NOT NULL, price REAL, note TEXT)")
            try db.execute(sql: "ATTACH DATABASE ? AS device", arguments: [path])
            try db.execute(sql: "INSERT INTO item SELECT id, name, qty, price, note FROM device.item")
            try db.execute(sql: "DETACH DATABASE device")
            try db.execute(sql: "VACUUM")
        }
        try plain.close()
        return (try FileManager.default.attributesOfItem(atPath: plainPath)[.size] as? Int) ?? 0
    }
}
