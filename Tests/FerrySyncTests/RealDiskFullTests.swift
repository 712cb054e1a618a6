@testable import Ferry
@testable import FerryServer
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// A really full disk: the device's database, or the server's store and
/// blobs, on a small tmpfs filled to within a few KiB, so writes fail with
/// `ENOSPC` from the kernel. (``DiskFullTests`` does the same with SQLite's
/// page cap, on any machine.) Where mounting is not permitted the tests say
/// so and skip, except under `CI=true`.
@Suite(.serialized) struct RealDiskFullTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    private static let page = String(repeating: "y", count: 8192)

    @Test func aDeviceOnAFullDiskRefusesTheWriteKeepsItsDataAndSyncsOnceSpaceReturns() async throws {
        guard let disk = try SmallDisk.mount(bytes: 16 << 20) else { return }
        defer { disk.unmount() }
        let server = try await SyncServer.start()
        defer { Task { await server.stop() } }
        let phone = try await Device.make("phone", user: "alice", server: server, directory: disk.directory)
        let other = try await Device.make("other", user: "alice", server: server, directory: directory)
        for index in 0..<20 {
            try phone.execute("INSERT INTO note(id, title) VALUES (?, ?)", ["n\(index)", "synced \(index)"])
        }
        _ = try await phone.engine.sync()
        for index in 20..<25 {
            try phone.execute("INSERT INTO note(id, title) VALUES (?, ?)", ["n\(index)", "pending \(index)"])
        }
        let before = try phone.notes()
        try disk.fill(leaving: 16 << 10)

        let refused = await #expect(throws: FerryError.self) {
            try await phone.database.write { db in
                for index in 0..<100 {
                    try db.execute(sql: "INSERT INTO note(id, title, body) VALUES (?, 'big', ?)", arguments: ["big\(index)", Self.page])
                }
            }
        }
        #expect(refused?.code == .storageFull, "\(String(describing: refused))")
        #expect(try DiskFullTests.integrity(phone.database.writer) == "ok")
        #expect(try phone.notes() == before)
        #expect(try phone.database.outbox.pendingCount() == 5)

        for index in 0..<100 {
            try other.execute("INSERT INTO note(id, title, body) VALUES (?, 'remote', ?)", ["r\(index)", Self.page])
        }
        _ = try await other.engine.sync()
        let pullRefused = await #expect(throws: FerryError.self) { try await phone.engine.sync() }
        #expect(pullRefused?.code == .storageFull, "\(String(describing: pullRefused))")
        #expect(try DiskFullTests.integrity(phone.database.writer) == "ok")
        let kept = try phone.notes()
        #expect(before.allSatisfy { kept[$0.key] == $0.value }, "a committed note was lost")

        try disk.free()
        _ = try await phone.engine.sync()
        _ = try await other.engine.sync()
        #expect(try phone.notes().count == 125)
        #expect(try other.notes() == phone.notes())
        #expect(try await server.storeVersion() == 125)
        #expect(try phone.database.outbox.pendingCount() == 0)
        #expect(try DiskFullTests.integrity(phone.database.writer) == "ok")
    }

    @Test func aServerOnAFullDiskAnswers503ForRowsAndBlobsChangesNothingAndTakesThemOnceSpaceReturns() async throws {
        guard let disk = try SmallDisk.mount(bytes: 16 << 20) else { return }
        defer { disk.unmount() }
        let server = try await SyncServer.start(in: disk.directory)
        defer { Task { await server.stop() } }
        let store = try #require(server.sqlite)
        let device = try await Device.make("a", user: "alice", server: server, directory: directory,
                                           configure: { $0.retry.attemptsPerSync = 2 })
        try device.execute("INSERT INTO note(id, title) VALUES ('first', 'fits')")
        _ = try await device.engine.sync()
        for index in 0..<60 {
            try device.execute("INSERT INTO note(id, title, body) VALUES (?, 'big', ?)", ["n\(index)", Self.page])
        }
        let photo = Data((0..<400_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let attachment = try await device.database.attachments.add(data: photo, to: "note", row: "first", name: "photo.raw")
        try disk.fill(leaving: 16 << 10)
        let before = try DiskFullTests.dump(store.pool)

        let gaveUp = await #expect(throws: FerryError.self) { try await device.engine.sync() }
        #expect(gaveUp?.code == .serverUnavailable, "\(String(describing: gaveUp))")
        #expect(gaveUp?.message.contains("no space left") == true, "\(String(describing: gaveUp))")
        #expect(try DiskFullTests.dump(store.pool) == before)
        // The upload met a 503 and waits for the next sync.
        let waiting = try device.database.attachments.attachment(id: attachment.id)?.state
        guard case .failed(let reason)? = waiting else {
            Issue.record("the upload did not fail: \(String(describing: waiting))")
            return
        }
        #expect(reason.contains("503") && reason.contains("no space left"), "\(reason)")
        #expect(try await server.blobs.list().filter(\.complete).isEmpty)
        #expect(try DiskFullTests.integrity(store.pool) == "ok")

        try disk.free()
        _ = try await device.engine.sync()
        #expect(try await server.rows("note", in: "user:alice").count == 61)
        #expect(try await server.storeVersion() == 62)  // 61 notes and the attachment's row
        #expect(try device.database.outbox.pendingCount() == 0)
        #expect(try device.database.attachments.attachment(id: attachment.id)?.state == .uploaded)
        #expect(try await server.blobs.list().filter(\.complete).map(\.key.sha256) == [attachment.sha256])
    }
}
