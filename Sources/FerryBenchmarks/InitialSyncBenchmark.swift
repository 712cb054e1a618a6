@_spi(Benchmarks) import Ferry
import FerryHTTPClient
import FerryServer
import Foundation
import AsyncHTTPClient
import GRDB
import NIOCore

/// Initial sync over loopback: a fresh device pulls every row of a scope
/// from a `ferry-server` process, against a plain GRDB insert of the same
/// rows, already decoded, into the same kind of table.
///
/// The server runs as its own process. The syncing device runs in a child
/// `ferry-bench` process too (``runClient(url:token:directory:)``), so its
/// peak memory (`ru_maxrss`) is the sync's alone.
public struct InitialSyncBenchmark: Sendable {
    public var rows: Int
    public var pageSize: Int

    public init(rows: Int, pageSize: Int = 1000) {
        self.rows = rows
        self.pageSize = pageSize
    }

    static let secret = "ferry-bench-secret-0123456789abcdef-0123"

    static func schema() -> FerrySchema {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE item (id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, qty INTEGER NOT NULL, price REAL, note TEXT)
                    """)
        }
        return FerrySchema(migrator: migrator, syncedTables: [SyncedTable("item")])
    }

    /// What the child process reports, as one JSON line.
    public struct ClientReport: Codable, Sendable {
        public var rows: Int
        public var syncSeconds: Double
        public var peakRSSBytes: Int
        public var plainInsertSeconds: Double
        public var waitingForServerSeconds: Double
        public var inDatabaseSeconds: Double
        /// Applying the same rows, as pages already held, to a fresh device.
        public var deviceApplySeconds: Double
    }

    public func run(in directory: URL) async throws -> [BenchmarkResult] {
        // The server's store is seeded in SQL, as if one device had pushed
        // every row (pushing 1M rows takes many minutes; `drain` measures that).
        let data = directory.appendingPathComponent("server-\(rows)").path
        try await Self.seedServer(data: data, rows: rows)
        let server = try ServerRoundTripBenchmark.startServer(in: directory, name: "server-\(rows)")
        defer { server.process.terminate(); server.process.waitUntilExit() }
        let url = server.url, token = server.token

        // The fresh device, in its own process.
        let child = Process()
        child.executableURL = try Self.sibling("ferry-bench")
        child.arguments = [
            "--sync-client-url", url.absoluteString, "--sync-client-token", token,
            "--sync-client-directory", directory.appendingPathComponent("client-\(rows)").path,
            "--sync-page-size", "\(pageSize)",
        ]
        let childOutput = Pipe()
        child.standardOutput = childOutput
        try child.run()
        let data_ = childOutput.fileHandleForReading.readDataToEndOfFile()
        child.waitUntilExit()
        guard let line = String(decoding: data_, as: UTF8.self).split(separator: "\n").last(where: { $0.hasPrefix("{") }) else {
            throw BenchmarkError("the sync client printed no report: \(String(decoding: data_, as: UTF8.self))")
        }
        let report = try JSONDecoder().decode(ClientReport.self, from: Data(line.utf8))
        guard report.rows == rows else { throw BenchmarkError("the client synced \(report.rows) of \(rows) rows") }

        let label = rows >= 1_000_000 ? "\(rows / 1_000_000)M" : "\(rows / 1000)k"
        let syncRate = Double(rows) / report.syncSeconds
        let plainRate = Double(rows) / report.plainInsertSeconds

        // The server alone: pages fetched and discarded, against reading the same rows from the store file.
        // The goal's pages are plain JSON, as the baseline's read is; the same pages gzipped (what a Ferry
        // client asks for) are a row of their own.
        let serverRSSBefore = processMemory("VmRSS", of: server.process.processIdentifier)
        let drained = try await Self.drainPages(url: url, token: token, pageSize: pageSize, expected: rows, compressed: false)
        let serverPeak = processMemory("VmHWM", of: server.process.processIdentifier)
        let drainedCompressed = try await Self.drainPages(url: url, token: token, pageSize: pageSize, expected: rows, compressed: true)
        let read = try Self.readStore(data: data)
        let drainRate = Double(rows) / seconds(drained)
        let compressedRate = Double(rows) / seconds(drainedCompressed)
        let readRate = Double(rows) / seconds(read)
        return [
            BenchmarkResult(
                scenario: "initial sync, \(label) rows: the server alone, plain JSON (pages fetched and discarded; server peak RSS)",
                ferry: String(
                    format: "%.0f rows/s, server %.0f MiB before, %.0f MiB peak", drainRate,
                    Double(serverRSSBefore) / 1_048_576, Double(serverPeak) / 1_048_576),
                baseline: String(format: "%.0f rows/s (plain SQLite read of the store file)", readRate),
                ratio: drainRate / readRate, goal: 0.5, direction: .atLeast),
            BenchmarkResult(
                scenario: "initial sync, \(label) rows: the server alone, pages gzipped (as a Ferry client asks)",
                ferry: String(format: "%.0f rows/s", compressedRate),
                baseline: String(format: "%.0f rows/s (plain SQLite read of the store file)", readRate),
                ratio: compressedRate / readRate, goal: .nan, direction: .atLeast),
            BenchmarkResult(
                scenario: "initial sync, \(label) rows over loopback (rows/s; peak RSS of the syncing process)",
                ferry: String(
                    format: "%.0f rows/s, %.0f MiB peak (%.1f s waiting for the server, %.1f s in the database)",
                    syncRate, Double(report.peakRSSBytes) / 1_048_576, report.waitingForServerSeconds, report.inDatabaseSeconds),
                baseline: String(format: "%.0f rows/s (plain GRDB insert, rows decoded)", plainRate),
                ratio: syncRate / plainRate, goal: 0.33, direction: .atLeast),
            BenchmarkResult(
                scenario: "initial sync, \(label) rows: the device alone (pages already held, applied as pulled)",
                ferry: String(format: "%.0f rows/s", Double(rows) / report.deviceApplySeconds),
                baseline: String(format: "%.0f rows/s (plain GRDB insert, rows decoded)", plainRate),
                ratio: Double(rows) / report.deviceApplySeconds / plainRate, goal: 0.5, direction: .atLeast),
        ]
    }

    /// Pulls every page of the bench scope over HTTP and throws the bytes
    /// away: how fast the server serves an initial sync. `compressed`
    /// asks for gzip or deflate and inflates each page; otherwise the
    /// pages must come as plain JSON.
    ///
    /// Its own client: `HTTPClient.shared` decompresses, and so asks every
    /// server for compressed answers (`Accept-Encoding: deflate, gzip`),
    /// which once put zlib into a scenario meant to be plain.
    static func drainPages(url: URL, token: String, pageSize: Int, expected: Int, compressed: Bool) async throws -> Duration {
        var configuration = HTTPClient.Configuration()
        configuration.decompression = compressed ? .enabled(limit: .ratio(100)) : .disabled
        return try await withHTTPClient(configuration) { client in
            try await drainPages(client, url: url, token: token, pageSize: pageSize, expected: expected, compressed: compressed)
        }
    }

    private static func drainPages(
        _ client: HTTPClient, url: URL, token: String, pageSize: Int, expected: Int, compressed: Bool
    ) async throws -> Duration {
        var cursor: String?
        var pages = 0
        let start = ContinuousClock.now
        while true {
            var request = HTTPClientRequest(url: url.appendingPathComponent("v1/pull").absoluteString)
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            request.headers.add(name: "Content-Type", value: "application/json")
            let cursorJSON = cursor.map { ",\"cursor\":\"\($0)\"" } ?? ""
            request.body = .bytes(ByteBuffer(string: #"{"clientID":"drain","limit":\#(pageSize),"scopes":[{"scope":"user:bench"\#(cursorJSON)}]}"#))
            let response = try await client.execute(request, timeout: .seconds(60))
            var buffer = try await response.body.collect(upTo: 256 << 20)
            guard response.status == .ok else { throw BenchmarkError("pull answered \(response.status): \(String(buffer: buffer).prefix(200))") }
            if !compressed, let coding = response.headers.first(name: "Content-Encoding") {
                throw BenchmarkError("a page came \(coding) to a client that asked for plain JSON")
            }
            pages += 1
            // The cursor and hasMore follow the rows: look only at the page's end, not through its rows.
            buffer.moveReaderIndex(forwardBy: max(0, buffer.readableBytes - 1024))
            let tail = String(buffer: buffer)
            guard let range = tail.range(of: #""cursor":""#), let end = tail[range.upperBound...].firstIndex(of: "\"") else {
                throw BenchmarkError("a page without a cursor")
            }
            cursor = String(tail[range.upperBound..<end])
            if !tail.contains(#""hasMore":true"#) { break }
        }
        let elapsed = ContinuousClock.now - start
        guard pages >= expected / pageSize else { throw BenchmarkError("drained \(pages) pages for \(expected) rows") }
        return elapsed
    }

    /// Reads every row of the bench scope from the store file, as the pull query does, into memory.
    static func readStore(data: String) throws -> Duration {
        let queue = try DatabaseQueue(path: URL(fileURLWithPath: data).appendingPathComponent(SQLiteSyncStore.fileName).path)
        defer { try? queue.close() }
        let start = ContinuousClock.now
        let count = try queue.read { db in
            var count = 0
            let rows = try Row.fetchCursor(db, sql: "SELECT tbl, row_id, version, deleted, cells FROM rows WHERE scope = 'user:bench' ORDER BY version")
            while let row = try rows.next() {
                let cells: String = row["cells"]
                count += cells.utf8.count > 0 ? 1 : 0
            }
            return count
        }
        _ = count
        return ContinuousClock.now - start
    }

    /// Writes `rows` items into a new server store at `data`, with the cells
    /// a push of them would store, and the store's version after them.
    static func seedServer(data: String, rows: Int) async throws {
        let store = try SQLiteSyncStore(directory: URL(fileURLWithPath: data))
        try await store.close()
        let queue = try DatabaseQueue(path: URL(fileURLWithPath: data).appendingPathComponent(SQLiteSyncStore.fileName).path)
        try await queue.write { db in
            try db.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                    INSERT INTO rows (scope, tbl, row_id, version, deleted, client_id, changed_at, cells)
                    SELECT 'user:bench', 'item', printf('row-%08d', i), i, 0, 'bench:seed', 0,
                        '{"name":{"clientID":"bench:seed","hlc":0,"value":"item ' || i || '","version":' || i || '},'
                        || '"note":{"clientID":"bench:seed","hlc":0,"value":"note ' || i || '","version":' || i || '},'
                        || '"price":{"clientID":"bench:seed","hlc":0,"value":{"real":"' || (i * 0.25) || '"},"version":' || i || '},'
                        || '"qty":{"clientID":"bench:seed","hlc":0,"value":' || i || ',"version":' || i || '}}'
                    FROM n
                    """, arguments: [rows])
            try db.execute(sql: "UPDATE store_meta SET value = ? WHERE key = 'version'", arguments: [rows])
        }
        try queue.close()
    }

    /// The child process: a fresh device syncs everything, then the same
    /// rows, read back into memory, are inserted into a plain table.
    public static func runClient(url: URL, token: String, directory: URL, pageSize: Int) async throws -> ClientReport {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let database = try FerryDatabase(path: directory.appendingPathComponent("device.sqlite").path, schema: schema())
        var configuration = SyncConfiguration(userID: "bench")
        configuration.pullPageSize = pageSize
        let engine = try SyncEngine(database: database, transport: HTTPSyncTransport(baseURL: url), configuration: configuration, token: token)
        let start = ContinuousClock.now
        let summary = try await engine.sync()
        let syncTime = ContinuousClock.now - start
        #if os(Linux)
            // This process's own high-water mark. `ru_maxrss` is not: Foundation starts a child with
            // `posix_spawn`, which shares the parent's memory until exec, and the mark carries over
            // (after a 1M-row scenario in the parent it read 129 MiB for a 50 MiB sync).
            let peak = processMemory("VmHWM", of: getpid())
        #else
            var usage = rusage()
            getrusage(RUSAGE_SELF, &usage)
            let peak = Int(usage.ru_maxrss)  // bytes on Darwin
        #endif

        // Baseline: the same rows, decoded in memory, inserted by plain GRDB.
        let decoded = try await database.read { db in
            try Row.fetchAll(db, sql: "SELECT id, name, qty, price, note FROM item").map { row in
                [row["id"], row["name"], row["qty"], row["price"], row["note"]] as [DatabaseValue]
            }
        }
        var grdb = Configuration()
        grdb.journalMode = .wal
        let plain = try DatabasePool(path: directory.appendingPathComponent("plain.sqlite").path, configuration: grdb)
        try await plain.write { db in
            try db.execute(sql: "CREATE TABLE item (id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, qty INTEGER NOT NULL, price REAL, note TEXT)")
        }
        let plainStart = ContinuousClock.now
        try await plain.write { db in
            let insert = try db.makeStatement(sql: "INSERT INTO item(id, name, qty, price, note) VALUES (?, ?, ?, ?, ?)")
            for values in decoded { try insert.execute(arguments: StatementArguments(values)) }
        }
        let plainTime = ContinuousClock.now - plainStart

        // The device side alone: the same rows, as decoded pages in memory,
        // applied to a fresh device as the engine applies pulled pages.
        func wire(_ value: DatabaseValue) -> ColumnValue {
            switch value.storage {
            case .null: .null
            case .int64(let integer): .integer(integer)
            case .double(let real): .real(real)
            case .string(let text): .text(text)
            case .blob(let data): .blob(data)
            }
        }
        var pages: [PullPage] = []
        for start in stride(from: 0, to: decoded.count, by: pageSize) {
            let changes = decoded[start..<min(start + pageSize, decoded.count)].enumerated().map { offset, values in
                RowChange(
                    table: "item", rowID: String.fromDatabaseValue(values[0]) ?? "", version: Int64(start + offset + 1), deleted: false,
                    values: ["name": wire(values[1]), "qty": wire(values[2]), "price": wire(values[3]), "note": wire(values[4])])
            }
            pages.append(PullPage(scope: "user:bench", changes: changes, cursor: "c\(start)", hasMore: true, reset: false))
        }
        let fresh = try FerryDatabase(path: directory.appendingPathComponent("device-apply.sqlite").path, schema: schema())
        let applyStart = ContinuousClock.now
        for page in pages { _ = try fresh.applyPulledPage(page, userID: "bench") }
        let applyTime = ContinuousClock.now - applyStart
        return ClientReport(
            rows: summary.pulled, syncSeconds: seconds(syncTime), peakRSSBytes: peak,
            plainInsertSeconds: seconds(plainTime), waitingForServerSeconds: seconds(summary.waitingForServer),
            inDatabaseSeconds: seconds(summary.inDatabase), deviceApplySeconds: seconds(applyTime))
    }

    // MARK: - Processes

    static func sibling(_ name: String) throws -> URL {
        let url = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw BenchmarkError("\(name) is not built next to ferry-bench (\(url.path)); run `swift build -c release` first")
        }
        return url
    }

    static func listeningURL(_ handle: FileHandle) throws -> URL {
        var text = ""
        while true {
            let data = handle.availableData
            if data.isEmpty { throw BenchmarkError("ferry-server exited: \(text)") }
            text += String(decoding: data, as: UTF8.self)
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Ferry server listening on ") }),
                let url = URL(string: String(line.dropFirst("Ferry server listening on ".count)))
            {
                return url
            }
        }
    }

    static func capture(_ binary: URL, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
