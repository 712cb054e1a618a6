import Ferry
import FerryHTTPClient
import Foundation
import GRDB

/// Scenarios 11 and 11b: what a first sync costs on the wire, and how
/// often a live change is downloaded. A fresh device pulls
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
        let live = try await liveOnce(in: directory)
        return [
            BenchmarkResult(
                scenario: "initial sync, \(label) rows: bytes on the wire with compression (both ways, headers included)",
                ferry: "\(mib(compressed)) (uncompressed: \(mib(plain)), \(String(format: "%.2f", Double(plain) / Double(atRest)))× the file)",
                baseline: "\(mib(atRest)) (the rows in a plain SQLite file)",
                ratio: Double(compressed) / Double(atRest), goal: 1.0, direction: .atMost),
            live,
        ]
    }

    /// Scenario 11b: a device following live gets each 1-row change from
    /// another device as a live page, then pulls. A relay that keeps what
    /// it carried to the device (uncompressed, so a row's text is found as
    /// written) counts how often each row's unique text went by.
    func liveOnce(in directory: URL, changes: Int = 20) async throws -> BenchmarkResult {
        let server = try ServerRoundTripBenchmark.startServer(in: directory, name: "wire-live-server")
        defer { server.process.terminate(); server.process.waitUntilExit() }
        guard let port = server.url.port else { throw BenchmarkError("the server URL has no port: \(server.url)") }
        let relay = try ByteCountingProxy(target: port, capturing: true)
        defer { relay.stop() }
        func device(_ name: String, url: URL, live: Bool) throws -> (FerryDatabase, SyncEngine) {
            let database = try FerryDatabase(path: directory.appendingPathComponent("\(name).sqlite").path, schema: InitialSyncBenchmark.schema())
            var configuration = SyncConfiguration(userID: "bench")
            configuration.live = live
            configuration.periodicInterval = nil
            let engine = try SyncEngine(
                database: database, transport: HTTPSyncTransport(baseURL: url, requestTimeout: .seconds(30), compression: false),
                configuration: configuration, token: server.token)
            return (database, engine)
        }
        let (writer, writerEngine) = try device("wire-live-a", url: server.url, live: false)
        let (reader, readerEngine) = try device("wire-live-b", url: URL(string: "http://127.0.0.1:\(relay.port)")!, live: true)
        try await readerEngine.sync()
        await readerEngine.start()
        defer { Task { await readerEngine.stop() } }
        let deadline = ContinuousClock.now + .seconds(10)
        while !readerEngine.status.liveConnected || readerEngine.status.phase != .idle {
            guard ContinuousClock.now < deadline else { throw BenchmarkError("device B never connected to /v1/live") }
            try await Task.sleep(for: .milliseconds(10))
        }
        var transfers = 0
        for index in 0..<changes {
            let marker = "live-once-\(index)-" + UUID().uuidString
            try await writer.write { db in
                try db.execute(sql: "INSERT INTO item (id, name, qty, note) VALUES (?, 'live', 1, ?)", arguments: ["live-\(index)", marker])
            }
            try await writerEngine.sync()
            let arrival = ContinuousClock.now + .seconds(10)
            while try await reader.read({ db in try String.fetchOne(db, sql: "SELECT note FROM item WHERE id = ?", arguments: ["live-\(index)"]) }) != marker {
                guard ContinuousClock.now < arrival else { throw BenchmarkError("change \(index) never reached device B") }
                try await Task.sleep(for: .milliseconds(2))
            }
            try await readerEngine.sync()
            transfers += relay.occurrences(of: marker)
        }
        return BenchmarkResult(
            scenario: "a 1-row live change: times a second device downloads the row, live page + next pull (\(changes) changes)",
            ferry: String(format: "%.2f transfers per change", Double(transfers) / Double(changes)),
            baseline: "1 transfer", ratio: Double(transfers) / Double(changes), goal: 1.0, direction: .atMost)
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
