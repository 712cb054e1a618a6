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

    @Test func aDeviceOnAFullDiskRefusesTheWriteKeepsItsDataAndSyncsOnceSpaceReturns() async throws {
        guard let disk = try SmallDisk.mount(bytes: 16 << 20) else { return }
        defer { disk.unmount() }
        try await DiskFullTests.deviceFillsUp(in: disk.directory, otherIn: directory,
                                              fill: { _ in try disk.fill(leaving: 16 << 10) }, free: { _ in try disk.free() })
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
            try device.execute("INSERT INTO note(id, title, body) VALUES (?, 'big', ?)", ["n\(index)", DiskFullTests.page])
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
