import Ferry
import FerryHTTPClient
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import GRDB
import Logging
import PostgresNIO

/// Moving one large attachment (1 GiB by default) through a release
/// `ferry-server` process, on the filesystem blob store and on the
/// PostgreSQL one: the peak RSS growth of the server and of the client
/// process (a child `ferry-bench`, so its memory is its own), each against
/// a 32 MiB budget, and the bytes on the wire (counted by a TCP relay
/// between them) against the file's size.
public struct AttachmentBenchmark: Sendable {
    public var bytes: Int64

    public init(bytes: Int64 = 1 << 30) {
        self.bytes = bytes
    }

    /// What the client process measured, as JSON on its stdout.
    public struct ClientReport: Codable, Sendable {
        public var addSeconds: Double
        public var addRSSGrowth: Int
        public var uploadSeconds: Double
        public var uploadRSSGrowth: Int
        public var downloadSeconds: Double
        public var downloadRSSGrowth: Int
        public var identical: Bool
    }

    static let budget = 32 << 20

    /// The devices' transport: AsyncHTTPClient streams one body each way;
    /// URLSession sends 4 MiB windows, one `PUT` each.
    public enum Transport: String, Sendable, CaseIterable {
        case asyncHTTPClient = "async-http-client"
        case urlSession = "urlsession"
    }

    public func run(in directory: URL) async throws -> [BenchmarkResult] {
        var results: [BenchmarkResult] = []
        for transport in Transport.allCases {
            results += try await run(store: "filesystem", arguments: [], transport: transport, in: directory)
        }
        guard PostgresStoreBenchmark.isConfigured else {
            print("attachments on PostgreSQL skipped: no PostgreSQL cluster; run through scripts/with-postgres")
            return results
        }
        for transport in Transport.allCases {
            results += try await ThrowawayPostgresDatabase.with(prefix: "ferry_bench_blobs") { database in
                try await run(store: "PostgreSQL", arguments: ["--postgres", database.url], transport: transport, in: directory)
            }
        }
        return results
    }

    func run(store: String, arguments: [String], transport: Transport, in directory: URL) async throws -> [BenchmarkResult] {
        let label = "attachment of \(bytes >> 20) MiB, \(store) blob store, \(transport.rawValue)"
        let server = try ServerRoundTripBenchmark.startServer(
            in: directory, name: "blob-server-\(store)-\(transport.rawValue)",
            arguments: arguments + ["--max-blob-bytes", String(bytes)])
        defer { server.process.terminate(); server.process.waitUntilExit() }
        guard let serverPort = server.url.port else { throw BenchmarkError("the server URL has no port: \(server.url)") }
        let proxy = try ByteCountingProxy(target: serverPort)
        defer { proxy.stop() }
        let pid = server.process.processIdentifier
        try? "5".write(toFile: "/proc/\(pid)/clear_refs", atomically: false, encoding: .utf8)
        let serverBefore = processMemory("VmRSS", of: pid)
        var serverBeforeDownload = 0

        let child = Process()
        child.executableURL = try InitialSyncBenchmark.sibling("ferry-bench")
        child.arguments = [
            "--attachment-client-url", "http://127.0.0.1:\(proxy.port)", "--attachment-client-token", server.token,
            "--attachment-client-directory", directory.appendingPathComponent("blob-client-\(store)-\(transport.rawValue)").path,
            "--attachment-bytes", String(bytes), "--attachment-client-transport", transport.rawValue,
        ]
        let output = Pipe(), input = Pipe()
        child.standardOutput = output
        child.standardInput = input
        try child.run()
        // Between the upload and the download the child waits: the server's peak is read, and reset, per phase.
        var printed = Data()
        var uploadPeak = 0, uploadWire = (toServer: 0, toClient: 0), rehashed: Int64 = -1
        while true {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            printed.append(chunk)
            if uploadPeak == 0, String(decoding: printed, as: UTF8.self).contains("phase uploaded\n") {
                uploadPeak = processMemory("VmHWM", of: pid)
                uploadWire = proxy.counts
                proxy.reset()
                // Read straight from the server, not through the relay that counts the wire.
                rehashed = try await Self.rehashedBytes(server.url)
                try? "5".write(toFile: "/proc/\(pid)/clear_refs", atomically: false, encoding: .utf8)
                serverBeforeDownload = processMemory("VmRSS", of: pid)
                input.fileHandleForWriting.write(Data("go\n".utf8))
            }
        }
        child.waitUntilExit()
        let downloadPeak = processMemory("VmHWM", of: pid)
        guard let line = String(decoding: printed, as: UTF8.self).split(separator: "\n").last(where: { $0.hasPrefix("{") }) else {
            throw BenchmarkError("the attachment client printed no report: \(String(decoding: printed, as: UTF8.self))")
        }
        let report = try JSONDecoder().decode(ClientReport.self, from: Data(line.utf8))
        guard rehashed >= 0 else { throw BenchmarkError("the server's read-back count was never taken (no upload phase)") }
        guard report.identical else { throw BenchmarkError("the downloaded attachment differs from the one added") }
        let downloadWire = proxy.counts
        let mib = { (value: Int) in String(format: "%.1f MiB", Double(value) / 1_048_576) }
        let rate = { (seconds: Double) in String(format: "%.0f MB/s", Double(bytes) / seconds / 1e6) }
        let budget = "32 MiB budget"
        return [
            BenchmarkResult(
                scenario: "\(label): server peak RSS growth, upload",
                ferry: "+\(mib(uploadPeak - serverBefore)) (\(mib(serverBefore)) → \(mib(uploadPeak)))",
                baseline: budget, ratio: Double(uploadPeak - serverBefore) / Double(Self.budget), goal: 1, direction: .atMost),
            BenchmarkResult(
                scenario: "\(label): server peak RSS growth, download",
                ferry: "+\(mib(downloadPeak - serverBeforeDownload)) (\(mib(serverBeforeDownload)) → \(mib(downloadPeak)))",
                baseline: budget, ratio: Double(downloadPeak - serverBeforeDownload) / Double(Self.budget), goal: 1, direction: .atMost),
            BenchmarkResult(
                scenario: "\(label): client peak RSS growth, upload (\(rate(report.uploadSeconds)))",
                ferry: "+\(mib(report.uploadRSSGrowth))",
                baseline: budget, ratio: Double(report.uploadRSSGrowth) / Double(Self.budget), goal: 1, direction: .atMost),
            BenchmarkResult(
                scenario: "\(label): client peak RSS growth, download and verify (\(rate(report.downloadSeconds)))",
                ferry: "+\(mib(report.downloadRSSGrowth))",
                baseline: budget, ratio: Double(report.downloadRSSGrowth) / Double(Self.budget), goal: 1, direction: .atMost),
            BenchmarkResult(
                scenario: "\(label): client peak RSS growth, add (copy, fsync, hash; \(rate(report.addSeconds)))",
                ferry: "+\(mib(report.addRSSGrowth))",
                baseline: budget, ratio: Double(report.addRSSGrowth) / Double(Self.budget), goal: 1, direction: .atMost),
            BenchmarkResult(
                scenario: "\(label): bytes on the wire, upload (both ways, the whole sync, headers included)",
                ferry: "\(uploadWire.toServer + uploadWire.toClient) bytes", baseline: "\(bytes) bytes (the file)",
                ratio: Double(uploadWire.toServer + uploadWire.toClient) / Double(bytes), goal: 1.01, direction: .atMost),
            BenchmarkResult(
                scenario: "\(label): bytes the server read back from its blob store while receiving the upload",
                ferry: "\(rehashed) bytes (ferry_blob_upload_rehashed_bytes)", baseline: "\(bytes) bytes (the file)",
                ratio: Double(rehashed) / Double(bytes), goal: 0, direction: .atMost),
            BenchmarkResult(
                scenario: "\(label): bytes on the wire, download (both ways, the whole sync, headers included)",
                ferry: "\(downloadWire.toServer + downloadWire.toClient) bytes", baseline: "\(bytes) bytes (the file)",
                ratio: Double(downloadWire.toServer + downloadWire.toClient) / Double(bytes), goal: 1.01, direction: .atMost),
        ]
    }

    /// `ferry_blob_upload_rehashed_bytes` from the server's `/metrics`.
    static func rehashedBytes(_ server: URL) async throws -> Int64 {
        let (data, _) = try await URLSession.shared.data(from: server.appending(path: "metrics"))
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("ferry_blob_upload_rehashed_bytes ") }
        guard let value = line?.split(separator: " ").last.flatMap({ Double($0) }) else {
            throw BenchmarkError("the server's /metrics has no ferry_blob_upload_rehashed_bytes")
        }
        return Int64(value)
    }

    // MARK: - The client process

    /// Device A adds a file of `bytes` and syncs (uploading it); device B,
    /// eager, syncs (downloading and verifying it). Each phase's peak RSS
    /// growth is measured from a reset of the process's high-water mark.
    public static func runClient(url: URL, token: String, directory: URL, bytes: Int64, transport: Transport) async throws -> ClientReport {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let source = directory.appendingPathComponent("source.bin")
        try writeFile(source, bytes: bytes)
        let clock = ContinuousClock()
        func device(_ name: String) throws -> (FerryDatabase, SyncEngine) {
            var configuration = FerryConfiguration()
            configuration.attachmentsDirectory = directory.appendingPathComponent("\(name)-files")
            configuration.attachmentDownloads = ["item": .eager]
            let database = try FerryDatabase(
                path: directory.appendingPathComponent("\(name).sqlite").path,
                schema: InitialSyncBenchmark.schema(), configuration: configuration)
            var sync = SyncConfiguration(userID: "bench")
            sync.periodicInterval = nil
            let engine = try SyncEngine(
                database: database,
                transport: transport == .urlSession
                    ? URLSessionSyncTransport(baseURL: url, requestTimeout: .seconds(600))
                    : HTTPSyncTransport(baseURL: url, requestTimeout: .seconds(600)),
                configuration: sync, token: token)
            return (database, engine)
        }
        let (a, engineA) = try device("a")
        let (b, engineB) = try device("b")
        try await a.write { db in try db.execute(sql: "INSERT INTO item (id, name, qty) VALUES ('big', 'scan', 1)") }

        var start = resetPeak()
        var began = clock.now
        let added = try await a.attachments.add(file: source, to: "item", row: "big")
        let addSeconds = seconds(clock.now - began)
        let addGrowth = peak() - start

        start = resetPeak()
        began = clock.now
        let pushed = try await engineA.sync()
        let uploadSeconds = seconds(clock.now - began)
        let uploadGrowth = peak() - start
        guard pushed.attachmentsUploaded == 1 else { throw BenchmarkError("the upload failed: \(pushed)") }
        // The parent reads the server's peak, then says go.
        FileHandle.standardOutput.write(Data("phase uploaded\n".utf8))
        _ = Swift.readLine()

        start = resetPeak()
        began = clock.now
        let pulled = try await engineB.sync()
        let downloadSeconds = seconds(clock.now - began)
        let downloadGrowth = peak() - start
        guard pulled.attachmentsDownloaded == 1 else { throw BenchmarkError("the download failed: \(pulled)") }

        let onB = try b.attachments.list(table: "item", row: "big")
        // B's file, byte for byte against the file added on A.
        let identical =
            try onB.map(\.sha256) == [added.sha256] && onB.first?.state == .uploaded
            && b.attachments.localURL(for: onB[0]).map { try Self.sameBytes($0, source) } == true
        try? FileManager.default.removeItem(at: directory)
        return ClientReport(
            addSeconds: addSeconds, addRSSGrowth: addGrowth, uploadSeconds: uploadSeconds,
            uploadRSSGrowth: uploadGrowth, downloadSeconds: downloadSeconds,
            downloadRSSGrowth: downloadGrowth, identical: identical)
    }

    /// Whether two files hold the same bytes, compared 1 MiB at a time.
    static func sameBytes(_ first: URL, _ second: URL) throws -> Bool {
        let one = try FileHandle(forReadingFrom: first), two = try FileHandle(forReadingFrom: second)
        defer { try? one.close(); try? two.close() }
        while true {
            let a = try one.read(upToCount: 1 << 20) ?? Data(), b = try two.read(upToCount: 1 << 20) ?? Data()
            guard a == b else { return false }
            if a.isEmpty { return true }
        }
    }

    /// Resets this process's peak RSS to its current RSS (Linux
    /// `clear_refs`), and returns the current RSS.
    static func resetPeak() -> Int {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        return processMemory("VmRSS", of: getpid())
    }

    static func peak() -> Int { processMemory("VmHWM", of: getpid()) }

    /// A file of pseudo-random bytes, written 1 MiB at a time.
    static func writeFile(_ url: URL, bytes: Int64) throws {
        FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var written: Int64 = 0
        while written < bytes {
            for index in stride(from: 0, to: chunk.count, by: 8) {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                withUnsafeBytes(of: state) { word in
                    for offset in 0..<8 { chunk[index + offset] = word[offset] }
                }
            }
            let count = Int(min(Int64(chunk.count), bytes - written))
            try handle.write(contentsOf: chunk[0..<count])
            written += Int64(count)
        }
    }
}
