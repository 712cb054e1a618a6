@testable import Ferry
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// Maintenance and the cache's eviction: the pure decisions, then the
/// files and states of a real database directory put back in step.
@Suite struct AttachmentMaintenanceTests {
    @Test func evictionTakesTheLeastRecentlyOpenedUploadedFilesFirst() {
        let files: [AttachmentEviction.File] = [
            .init(id: "new", size: 400, uploaded: true, lastOpenedAt: 30),
            .init(id: "old", size: 400, uploaded: true, lastOpenedAt: 10),
            .init(id: "never", size: 400, uploaded: true, lastOpenedAt: nil),
            .init(id: "local", size: 400, uploaded: false, lastOpenedAt: 0),
            .init(id: "kept", size: 400, uploaded: true, lastOpenedAt: 1),
        ]
        #expect(AttachmentEviction(limit: 2_000, keeping: nil).evict(files) == [])
        #expect(AttachmentEviction(limit: 1_200, keeping: "kept").evict(files) == ["never", "old"])
        #expect(AttachmentEviction(limit: 1_000, keeping: "kept").evict(files) == ["never", "old", "new"])
        // What cannot go stays, even over the limit.
        #expect(AttachmentEviction(limit: 0, keeping: "kept").evict(files) == ["never", "old", "new"])
    }

    @Test func thePlanRemovesOrphansKeepsWorkUnderWayAndMarksWhatIsGone() {
        let records: [AttachmentMaintenancePlan.Record] = [
            .init(id: "whole", path: "note/n1/whole", size: 10, state: .uploaded),
            .init(id: "gone", path: "note/n1/gone", size: 10, state: .localOnly),
            .init(id: "half", path: "note/n1/half", size: 10, state: .downloading),
            .init(id: "landed", path: "note/n1/landed", size: 10, state: .downloading),
            .init(id: "pulled", path: "note/n2/pulled", size: 10, state: nil),
        ]
        let disk = AttachmentMaintenancePlan.Disk(
            staging: ["crashed": 3, "adding": 5],
            temp: ["half": 4, "landed": 10, "removed": 2, "adding": 1],
            attachments: [
                "note/n1/whole": 10, "note/n1/landed": 10, "note/n1/stray": 7, "note/n1/adding": 5,
                "note/n1/short": 3,
            ])
        let plan = AttachmentMaintenancePlan(
            records: records, fileStates: ["whole", "gone", "half", "landed", "forgotten"],
            disk: disk, inFlight: ["adding"])
        #expect(
            plan.remove == [
                "staging/crashed", "temp/landed", "temp/removed", "attachments/note/n1/short",
                "attachments/note/n1/stray",
            ])
        #expect(plan.markMissing == ["gone", "half"])
        #expect(plan.markPresent == ["landed"])
        #expect(plan.forget == ["forgotten"])
    }

    @Test func maintenancePutsFilesAndStatesBackInStep() async throws {
        let directory = try TemporaryDirectory()
        var configuration = FerryConfiguration()
        let files = directory.url.appending(path: "files")
        configuration.attachmentsDirectory = files
        let database = try FerryDatabase(
            path: directory.path("notes.sqlite"), schema: ItemSchema.schema,
            configuration: configuration)
        try await database.write { db in
            try db.execute(sql: "INSERT INTO item(id, writer, revision) VALUES ('r1', 'me', 0)")
        }
        let kept = try await database.attachments.add(data: Data(repeating: 1, count: 1000), to: "item", row: "r1")
        let lost = try await database.attachments.add(data: Data(repeating: 2, count: 1000), to: "item", row: "r1")
        // Behind Ferry's back: a file deleted, leftovers of crashes, a stray file.
        try FileManager.default.removeItem(at: files.appending(path: "attachments/item/r1/\(lost.id)"))
        for leftover in ["staging/x", "temp/y", "attachments/item/r9/z"] {
            let url = files.appending(path: leftover)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data("left".utf8).write(to: url)
        }
        let report = try await database.attachments.maintain()
        #expect(report == AttachmentMaintenanceReport(filesRemoved: 3, markedMissing: 1, markedPresent: 0, evicted: 0))
        #expect(try database.attachments.attachment(id: lost.id)?.state == .missing)
        #expect(try database.attachments.data(for: kept) == Data(repeating: 1, count: 1000))
        #expect(!FileManager.default.fileExists(atPath: files.appending(path: "attachments/item/r9").path))
        // A second pass finds nothing to do.
        #expect(try await database.attachments.maintain() == AttachmentMaintenanceReport())
    }
}
