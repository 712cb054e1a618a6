@_spi(Testing) @testable import Ferry
import FerryTesting
import FerryHTTPClient
import FerryProtocol
import FerryTestSupport
import Foundation
import GRDB
import Testing

/// `ferry-test-worker` adds or moves an attachment and kills itself with
/// SIGKILL at a chosen step; the test reopens the database, runs
/// maintenance and checks that no metadata is left without its file (unless
/// marked missing), no file without its metadata, and that an interrupted
/// transfer continues where it stopped.
@Suite(.postgresTurns, .serialized) struct AttachmentCrashTests {
    static let roundsPerStep = 3

    @Test func aKilledAddLeavesNoMetadataWithoutItsFileAndNoOrphanFile() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("device.sqlite")
        let files = directory.url.appending(path: "files")
        var committed = 0
        for step in ["staged", "placed", "recorded", "committed"] {
            for round in 1...Self.roundsPerStep {
                let worker = try WorkerProcess(["attach", path, files.path, step])
                let lines = worker.readRemainingLines()
                worker.wait()
                #expect(
                    worker.process.terminationReason == .uncaughtSignal && worker.process.terminationStatus == SIGKILL,
                    "\(step) \(round): the worker was not killed at its step: \(lines)")
                if step == "committed" { committed += 1 }

                let database = try Self.open(path, files: files)
                // Before maintenance: the step's leftovers are there to find.
                let staged = (try? FileManager.default.contentsOfDirectory(atPath: files.appending(path: "staging").path)) ?? []
                #expect(staged.isEmpty == (step != "staged"), "\(step): staging holds \(staged)")
                let report = try await database.attachments.maintain()
                #expect(report.filesRemoved == (step == "committed" ? 0 : 1), "\(step) \(round): \(report)")
                try Self.checkConsistent(database, files: files, context: "\(step) \(round)")
                let attachments = try database.attachments.list(table: "item", row: "r1")
                #expect(attachments.count == committed, "\(step) \(round)")
                #expect(attachments.allSatisfy { $0.state == .localOnly && $0.size == 2 << 20 })
                // Each committed attachment went out with its outbox entry, in the same transaction.
                let queued = try await database.read { db in
                    try Int.fetchOne(db, sql: "SELECT count(DISTINCT row_id) FROM ferry_outbox WHERE tbl = 'ferry_attachments'") ?? 0
                }
                #expect(queued == committed, "\(step) \(round)")
            }
        }
    }

    @Test(arguments: StoreKind.available) func aDownloadKilledHalfwayContinuesWithARangeRequest(_ kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let directory = try TemporaryDirectory()
            let size = 3 << 20 + 17
            let bytes = AttachmentSyncTests.bytes(size, seed: 7)
            let writer = try await Self.device("a", server: server, directory: directory)
            try await writer.database.write { db in
                try db.execute(sql: "INSERT INTO item(id, writer, revision) VALUES ('r1', 'a', 0)")
            }
            try await writer.database.attachments.add(data: bytes, to: "item", row: "r1")
            try await writer.engine.sync()

            let path = directory.path("b.sqlite")
            let files = directory.url.appending(path: "b-files")
            let worker = try WorkerProcess([
                "transfer", path, files.path, server.baseURL.absoluteString,
                try await server.token("alice"), "alice", "download", String(1 << 20),
            ])
            let lines = worker.readRemainingLines()
            worker.wait()
            #expect(worker.process.terminationStatus == SIGKILL, "the worker was not killed mid-download: \(lines)")

            let recorder = BlobRecorder()
            let reader = try await Self.device(
                "b", server: server, directory: directory,
                transport: { ForwardingTransport.recording($0, recorder) })
            try await reader.database.attachments.maintain()
            try Self.checkConsistent(reader.database, files: files, context: "after the kill")
            let attachment = try #require(try reader.database.attachments.list(table: "item", row: "r1").first)
            #expect(attachment.state == .missing)
            let held = AttachmentFiles.size(of: files.appending(path: "temp").appending(path: attachment.id)) ?? 0
            #expect(held >= 1 << 20 && held < Int64(size), "the partial download was not kept: \(held)")
            let url = try await reader.engine.open(attachment)
            #expect(try Data(contentsOf: url) == bytes)
            #expect(recorder.downloads == [held], "the download did not continue from the bytes held")
            try await reader.database.attachments.maintain()
            try Self.checkConsistent(reader.database, files: files, context: "after the download")
        }
    }

    @Test(arguments: StoreKind.available) func anUploadKilledHalfwayContinuesFromTheServersOffset(_ kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let directory = try TemporaryDirectory()
            let size = 4 << 20 + 5
            let bytes = AttachmentSyncTests.bytes(size, seed: 8)
            let path = directory.path("a.sqlite")
            let files = directory.url.appending(path: "a-files")
            do {
                let database = try Self.open(path, files: files)
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO item(id, writer, revision) VALUES ('r1', 'a', 0)")
                }
                try await database.attachments.add(data: bytes, to: "item", row: "r1")
            }
            let token = try await server.token("alice")
            let worker = try WorkerProcess([
                "transfer", path, files.path, server.baseURL.absoluteString,
                token, "alice", "upload", String(5 << 19),
            ])
            let paused = worker.readLine()
            #expect(paused?.hasPrefix("paused") == true, "the worker did not pause mid-upload: \(paused ?? "nothing")")
            // Kill it once the server holds part of the file, not before.
            let sha256 = try #require(try Self.open(path, files: files).attachments.list(table: "item", row: "r1").first).sha256
            let probe = HTTPSyncTransport(baseURL: server.baseURL, requestTimeout: .seconds(10))
            var held: Int64 = 0
            for _ in 0..<200 where held < 1 << 20 {
                held = try await probe.blobOffset(scope: "user:alice", sha256: sha256, token: token) ?? 0
                if held < 1 << 20 { try await Task.sleep(for: .milliseconds(25)) }
            }
            worker.kill()
            #expect(held >= 1 << 20 && held < Int64(size), "the server held \(held) bytes when the client was killed")

            let recorder = BlobRecorder()
            let writer = try await Self.device(
                "a", server: server, directory: directory,
                transport: { ForwardingTransport.recording($0, recorder) })
            let summary = try await writer.engine.sync()
            #expect(summary.attachmentsUploaded == 1)
            // The server kept what reached it (in whole 1 MiB chunks on
            // PostgreSQL). An upload sent before the server saw the cut is
            // refused (409) and asks again.
            let upload = try #require(recorder.uploads.last)
            #expect(
                upload.offset >= 1 << 20 && upload.offset < Int64(size),
                "the upload restarted from \(upload.offset): \(recorder.uploads)")
            print(
                "\(kind): upload killed with \(held) bytes on the server: resumed at \(upload.offset), sent \(Int64(size) - upload.offset) of \(size) bytes; attempts \(recorder.uploads.map(\.offset))"
            )

            let reader = try await Self.device("b", server: server, directory: directory)
            try await reader.engine.sync()
            let attachment = try #require(try reader.database.attachments.list(table: "item", row: "r1").first)
            #expect(try Data(contentsOf: try await reader.engine.open(attachment)) == bytes)
        }
    }

    // MARK: - Support

    static func open(_ path: String, files: URL) throws -> FerryDatabase {
        var configuration = FerryConfiguration()
        configuration.attachmentsDirectory = files
        return try FerryDatabase(path: path, schema: ItemSchema.schema, configuration: configuration)
    }

    static func device(
        _ name: String, server: SyncServer, directory: TemporaryDirectory,
        transport: ((any SyncTransport) -> any SyncTransport)? = nil
    ) async throws -> (database: FerryDatabase, engine: SyncEngine) {
        let database = try open(directory.path("\(name).sqlite"), files: directory.url.appending(path: "\(name)-files"))
        var configuration = SyncConfiguration(userID: "alice")
        configuration.periodicInterval = nil
        configuration.retry = RetryPolicy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200), attemptsPerSync: 5)
        let http: any SyncTransport = HTTPSyncTransport(baseURL: server.baseURL, requestTimeout: .seconds(10))
        let engine = try SyncEngine(
            database: database, transport: transport?(http) ?? http, configuration: configuration,
            token: try await server.token("alice"))
        return (database, engine)
    }

    /// Every attachment's file is whole (or it is marked missing), every
    /// file belongs to an attachment, and nothing is left in `staging/`.
    static func checkConsistent(_ database: FerryDatabase, files: URL, context: String) throws {
        let integrity = try database.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
        #expect(integrity == ["ok"], "\(context)")
        let attachments = try database.attachments.list(table: "item", row: "r1")
        var expected = Set<String>()
        for attachment in attachments {
            let url = files.appending(path: "attachments/item/r1/\(attachment.id)")
            if attachment.state == .missing {
                #expect(AttachmentFiles.size(of: url) == nil, "\(context): \(attachment.id) is missing but has a file")
                continue
            }
            expected.insert("item/r1/\(attachment.id)")
            #expect(try database.attachments.data(for: attachment).count == Int(attachment.size), "\(context)")
        }
        let onDisk = Set(
            (FileManager.default.enumerator(atPath: files.appending(path: "attachments").path)?
                .compactMap { $0 as? String } ?? []).filter { $0.split(separator: "/").count == 3 })
        #expect(onDisk == expected, "\(context): files without metadata: \(onDisk.subtracting(expected))")
        let staged = (try? FileManager.default.contentsOfDirectory(atPath: files.appending(path: "staging").path)) ?? []
        #expect(staged.isEmpty, "\(context): staging holds \(staged)")
        // No outbox entry outlived a rolled-back add.
        let strays = try database.read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT count(*) FROM ferry_outbox WHERE tbl = 'ferry_attachments'
                    AND row_id NOT IN (SELECT id FROM ferry_attachments)
                    """) ?? 0
        }
        #expect(strays == 0, "\(context): outbox entries for attachments that are not there")
    }
}

/// Records where each blob transfer started.
final class BlobRecorder: @unchecked Sendable {
    struct Upload: Sendable, Equatable { var offset: Int64; var size: Int64 }
    private let lock = NSLock()
    private var recordedUploads: [Upload] = []
    private var recordedDownloads: [Int64] = []

    var uploads: [Upload] { lock.withLock { recordedUploads } }
    var downloads: [Int64] { lock.withLock { recordedDownloads } }
    func upload(_ upload: Upload) { lock.withLock { recordedUploads.append(upload) } }
    func download(from offset: Int64) { lock.withLock { recordedDownloads.append(offset) } }
}

extension ForwardingTransport {
    /// Records where each blob transfer starts.
    static func recording(_ inner: any SyncTransport, _ recorder: BlobRecorder) -> ForwardingTransport {
        ForwardingTransport(
            inner,
            onUpload: { reader, size in
                recorder.upload(.init(offset: reader.offset, size: size))
                return reader
            }, onDownload: { recorder.download(from: $0) })
    }
}
