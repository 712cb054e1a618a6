@testable import Ferry
@testable import FerryServer
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// A really full disk: the device's database, or the server's store and
/// blobs, on a small tmpfs filled to within 256 KiB (the server's to its
/// last byte), so writes fail with
/// `ENOSPC` from the kernel. (``DiskFullTests`` does the same with SQLite's
/// page cap, on any machine.) Where mounting is not permitted the tests say
/// so and skip, except under `CI=true`.
@Suite(.postgresTurns, .serialized, .enabled(if: Prerequisites.runs(Prerequisites.mounts), "needs root to mount a tmpfs"))
struct RealDiskFullTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    @Test func aDeviceOnAFullDiskRefusesTheWriteKeepsItsDataAndSyncsOnceSpaceReturns() async throws {
        guard let disk = try SmallDisk.mount(bytes: 16 << 20) else { return }
        defer { disk.unmount() }
        try await DiskFullTests.deviceFillsUp(
            in: disk.directory, otherIn: directory,
            fill: { _ in try disk.fill(leaving: 256 << 10) }, free: { _ in try disk.free() })
    }

    /// An attachment copied onto a full disk: `storageFull`, no metadata and
    /// no file left of it; once space returns it is added and uploaded.
    @Test func anAttachmentThatDoesNotFitThrowsStorageFullAndLeavesNothingBehind() async throws {
        guard let disk = try SmallDisk.mount(bytes: 16 << 20) else { return }
        defer { disk.unmount() }
        let server = try await SyncServer.start()
        try await server.stopping {
            let phone = try await Device.make("phone", user: "alice", server: server, directory: disk.directory)
            try phone.execute("INSERT INTO note(id, title) VALUES ('n', 'with a photo')")
            _ = try await phone.engine.sync()
            try disk.fill(leaving: 64 << 10)
            let photo = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            let refused = await #expect(throws: FerryError.self) {
                try await phone.database.attachments.add(data: photo, to: "note", row: "n", name: "photo.raw")
            }
            #expect(refused?.code == .storageFull, "\(String(describing: refused))")
            #expect(refused?.message.contains("no space left") == true)
            #expect(try phone.database.attachments.list(table: "note", row: "n").isEmpty)
            let files = disk.directory.url.appending(path: "phone-files")
            let leftOver = Self.files(under: files.appending(path: "staging")) + Self.files(under: files.appending(path: "attachments"))
            #expect(leftOver.isEmpty, "a file was left behind: \(leftOver)")
            #expect(try DiskFullTests.integrity(phone.database.writer) == "ok")

            try disk.free()
            let added = try await phone.database.attachments.add(data: photo, to: "note", row: "n", name: "photo.raw")
            _ = try await phone.engine.sync()
            #expect(try phone.database.attachments.attachment(id: added.id)?.state == .uploaded)
            #expect(try await server.blobs.list().filter(\.complete).map(\.key.sha256) == [added.sha256])
        }
    }

    /// The SQLite store and its blob files on the small disk; or, on
    /// PostgreSQL, the database's tables in a tablespace on it.
    @Test(arguments: StoreKind.available)
    func aServerOnAFullDiskAnswers503ForRowsAndBlobsChangesNothingAndTakesThemOnceSpaceReturns(_ kind: StoreKind) async throws {
        guard let disk = try SmallDisk.mount(bytes: 16 << 20) else { return }
        defer { disk.unmount() }
        switch kind {
        case .sqlite:
            let server = try await SyncServer.start(in: disk.directory)
            try await server.stopping {
                let store = try #require(server.sqlite)
                try await serverFillsUp(
                    server, disk, dump: { try SQLiteDump.lines(store.pool) },
                    integrity: { try DiskFullTests.integrity(store.pool) == "ok" })
            }
        case .postgres:
            let database = try await PostgresTestDatabase.create()
            let tablespace = "ferry_small_\(getpid())"
            do {
                // A tablespace must be an empty directory its server's user owns.
                let dataDirectory = try #require(try await database.rows("SHOW data_directory").first)
                try Shell.run("mkdir '\(disk.directory.url.path)/pg' && chown \"$(stat -c %U '\(dataDirectory)')\" '\(disk.directory.url.path)/pg'")
                try await database.administer("CREATE TABLESPACE \(tablespace) LOCATION '\(disk.directory.url.path)/pg'")
                try await database.administer("ALTER DATABASE \(database.name) SET default_tablespace = \(tablespace)")
                let server = try await SyncServer.start(store: .postgres, sharing: database)
                try await server.stopping {
                    let onTheSmallDisk = try #require(
                        try await database.rows(
                            "SELECT count(*)::text FROM pg_tables WHERE tablespace = '\(tablespace)'"
                        ).first.flatMap { Int($0) })
                    #expect(onTheSmallDisk > 0, "the store's tables are not on the small disk")
                    // Blob uploads in progress are not stored data: compared by their complete keys below.
                    // PostgreSQL has no integrity check to ask; its own recovery keeps its files whole.
                    try await serverFillsUp(
                        server, disk, dump: { try await database.dump(excluding: ["ferry_blobs", "ferry_blob_chunks"]) },
                        integrity: nil)
                }
            } catch {
                try? await database.drop()
                try? await database.administer("DROP TABLESPACE IF EXISTS \(tablespace)")
                throw error
            }
            do {
                try await database.drop()
            } catch {
                try? await database.administer("DROP TABLESPACE IF EXISTS \(tablespace)")
                throw error
            }
            try await database.administer("DROP TABLESPACE \(tablespace)")
        }
    }

    /// The regular files anywhere under `folder`.
    private static func files(under folder: URL) -> [String] {
        let found = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey])
        return (found?.allObjects as? [URL] ?? [])
            .filter { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true }
            .map(\.path)
    }

    /// A device pushes rows and an attachment to `server`, whose disk then
    /// fills: both answer 503 ("no space left") and nothing stored changes;
    /// once space returns, one sync stores every row once and the attachment.
    private func serverFillsUp(
        _ server: SyncServer, _ disk: SmallDisk, dump: () async throws -> [String],
        integrity: (() throws -> Bool)?
    ) async throws {
        let device = try await Device.make(
            "a", user: "alice", server: server, directory: directory,
            configure: { $0.retry.attemptsPerSync = 2 })
        try device.execute("INSERT INTO note(id, title) VALUES ('first', 'fits')")
        _ = try await device.engine.sync()
        for index in 0..<60 {
            try device.execute("INSERT INTO note(id, title, body) VALUES (?, 'big', ?)", ["n\(index)", DiskFullTests.page])
        }
        let photo = Data((0..<400_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let attachment = try await device.database.attachments.add(data: photo, to: "note", row: "first", name: "photo.raw")
        try disk.fill(leaving: 0)
        let before = try await dump()

        let gaveUp = await #expect(throws: FerryError.self) { try await device.engine.sync() }
        #expect(gaveUp?.code == .serverUnavailable, "\(String(describing: gaveUp))")
        #expect(gaveUp?.message.contains("no space left") == true, "\(String(describing: gaveUp))")
        #expect(try await dump() == before)
        // The upload met a 503 and waits for the next sync.
        let waiting = try device.database.attachments.attachment(id: attachment.id)?.state
        if case .failed(let reason)? = waiting {
            #expect(reason.contains("503") && reason.contains("no space left"), "\(reason)")
        } else {
            Issue.record("the upload did not fail: \(String(describing: waiting))")
        }
        #expect(try await server.blobs.list().filter(\.complete).isEmpty)
        if let integrity { #expect(try integrity(), "integrity_check failed") }

        try disk.free()
        _ = try await device.engine.sync()
        #expect(try await server.rows("note", in: "user:alice").count == 61)
        // 61 notes and the attachment's row, each stored once. PostgreSQL's
        // sequence also spent draws on the pushes that rolled back, so there
        // the check is one result and one row version per mutation.
        if let postgres = server.postgres {
            #expect(try await postgres.rows("SELECT count(*)::text FROM ferry_recorded_results") == ["62"])
            #expect(try await postgres.rows("SELECT count(DISTINCT version)::text FROM ferry_rows") == ["62"])
        } else {
            #expect(try await server.storeVersion() == 62)
        }
        #expect(try device.database.outbox.pendingCount() == 0)
        #expect(try device.database.attachments.attachment(id: attachment.id)?.state == .uploaded)
        #expect(try await server.blobs.list().filter(\.complete).map(\.key.sha256) == [attachment.sha256])
    }
}
