import Ferry
import Foundation
import GRDB

/// What `status` reports: the work waiting, the last sync, sizes on disk,
/// and how the database has been doing in this process.
public struct NotesStatus: Sendable, Encodable {
    public var user: String?
    public var server: String?
    public var notes: Int
    public var deletedNotes: Int
    /// Local changes not yet acknowledged by the server.
    public var pendingChanges: Int
    public var conflicts: Int
    public var rejectedChanges: Int
    /// Notebooks to create and shares to apply at the next sync.
    public var pendingServerTasks: Int
    /// Milliseconds since 1970, `nil` before the first sync.
    public var lastSync: Int64?
    public var databaseBytes: Int64
    public var attachmentBytes: Int64
    public var attachmentsNotUploaded: Int
    /// Database timings, summed over every `ferry-notes` run on this file
    /// (each run adds its own when it ends).
    public var timings: NotesTimings
}

/// Transaction timings and busy waits, kept across runs.
public struct NotesTimings: Sendable, Codable, Hashable {
    public var runs = 0
    public var writeTransactions = 0
    public var readTransactions = 0
    /// The slowest p95 of any one run.
    public var worstWriteP95Milliseconds = 0.0
    public var worstReadP95Milliseconds = 0.0
    public var longWriteTransactions = 0
    public var busyWaits = 0
    public var busyTimeouts = 0
}

extension NotesLibrary {
    public func status() throws -> NotesStatus {
        let session = try session()
        let counts = try database.read { db in
            (
                try Int.fetchOne(db, sql: "SELECT count(*) FROM note WHERE deleted_at IS NULL") ?? 0,
                try Int.fetchOne(db, sql: "SELECT count(*) FROM note WHERE deleted_at IS NOT NULL") ?? 0,
                try Int.fetchOne(db, sql: "SELECT count(*) FROM notes_server_task") ?? 0
            )
        }
        let attachments = try database.read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT coalesce(sum(a.size), 0) AS bytes,
                           coalesce(sum(f.state IN ('localOnly', 'uploading', 'failed')), 0) AS waiting
                    FROM ferry_attachments a LEFT JOIN ferry_attachment_files f ON f.id = a.id
                    """)
        }
        let telemetry = database.telemetry.snapshot()
        let path = database.writer.path
        let databaseBytes = [path, path + "-wal"].compactMap {
            (try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? NSNumber)?.int64Value
        }.reduce(0, +)
        return NotesStatus(
            user: session?.user, server: session?.server.absoluteString, notes: counts.0, deletedNotes: counts.1,
            pendingChanges: try database.outbox.pendingCount(), conflicts: try conflicts().count,
            rejectedChanges: try database.outbox.rejectedMutations().count, pendingServerTasks: counts.2,
            lastSync: try setting("last_sync").flatMap { Int64($0) }, databaseBytes: databaseBytes,
            attachmentBytes: attachments?["bytes"] ?? 0, attachmentsNotUploaded: attachments?["waiting"] ?? 0,
            timings: try timings(adding: telemetry))
    }

    /// The timings kept so far, with `snapshot` (this run's) added.
    func timings(adding snapshot: DatabaseTelemetry.Snapshot) throws -> NotesTimings {
        var timings = (try setting("timings")).flatMap { try? JSONDecoder().decode(NotesTimings.self, from: Data($0.utf8)) } ?? NotesTimings()
        timings.runs += 1
        timings.writeTransactions += snapshot.writes.count
        timings.readTransactions += snapshot.reads.count
        timings.worstWriteP95Milliseconds = max(timings.worstWriteP95Milliseconds, Self.milliseconds(snapshot.writes.p95))
        timings.worstReadP95Milliseconds = max(timings.worstReadP95Milliseconds, Self.milliseconds(snapshot.reads.p95))
        timings.longWriteTransactions += snapshot.longWriteTransactions
        timings.busyWaits += snapshot.busyWaits
        timings.busyTimeouts += snapshot.busyTimeouts
        return timings
    }

    /// Adds this run's timings to those kept in the database: called as a command ends.
    public func recordTimings() throws {
        let timings = try timings(adding: database.telemetry.snapshot())
        try setSetting("timings", String(decoding: try JSONEncoder().encode(timings), as: UTF8.self))
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }
}
