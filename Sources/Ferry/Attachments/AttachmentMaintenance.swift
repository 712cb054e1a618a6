import Foundation
import GRDB
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What ``Attachments/maintain()`` found and did.
public struct AttachmentMaintenanceReport: Sendable, Hashable {
    /// Files deleted: staging leftovers of adds that never committed,
    /// downloads nobody needs any more, files no attachment refers to.
    public var filesRemoved = 0
    /// Attachments whose file was gone, now ``AttachmentState/missing``
    /// (fetched again on open, or at the next sync for an eager table).
    public var markedMissing = 0
    /// Attachments whose file was whole here though their state said not.
    public var markedPresent = 0
    /// Downloaded files evicted to keep within the cache limit.
    public var evicted = 0
}

extension Attachments {
    /// Brings the attachment files and their states back in step after a
    /// crash, an attachment removed on another device, or files deleted
    /// behind Ferry's back: removes orphaned staging and temp files and
    /// files no attachment refers to, marks attachments whose file is gone
    /// as missing, and enforces the cache limit. ``SyncEngine/sync()`` runs
    /// it after every sync; call it at launch too.
    ///
    /// ```swift
    /// let report = try await database.attachments.maintain()
    /// print(report.filesRemoved, report.markedMissing)
    /// ```
    ///
    /// Adds and downloads running in this process are left alone (and those
    /// that finish while it runs); another process adding attachments to the
    /// same directory (an app extension) must use its own directory.
    @discardableResult
    public func maintain() async throws -> AttachmentMaintenanceReport {
        let files = try self.files()
        return try await database.attachmentSettings.maintenancePass { protected in
            try await maintain(files, protected: protected)
        }
    }

    private func maintain(_ files: AttachmentFiles, protected: () -> Set<String>) async throws -> AttachmentMaintenanceReport {
        let (records, fileStates) = try await database.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT a.id, a.tbl, a.row_id, a.size, f.state
                    FROM ferry_attachments a LEFT JOIN ferry_attachment_files f ON f.id = a.id
                    """)
            let states = try String.fetchSet(db, sql: "SELECT id FROM ferry_attachment_files")
            return (rows, states)
        }
        let attachmentsPrefix = files.attachments.path + "/"
        let known = records.map { row in
            AttachmentMaintenancePlan.Record(
                id: row["id"], path: String(files.file(table: row["tbl"], row: row["row_id"], id: row["id"]).path.dropFirst(attachmentsPrefix.count)),
                size: files.format.storedSize(plain: row["size"]), state: row["state"])
        }
        // Read the disk after the database, and what is protected after the disk: a file found there that the
        // database did not know belongs to an add or a download in flight, or finished during this pass.
        let disk = AttachmentMaintenancePlan.Disk(
            staging: Self.files(in: files.staging, depth: 1), temp: Self.files(in: files.temp, depth: 1),
            attachments: Self.files(in: files.attachments, depth: 3))
        let inFlight = protected()
        let plan = AttachmentMaintenancePlan(records: known, fileStates: fileStates, disk: disk, inFlight: inFlight)
        var report = AttachmentMaintenanceReport()
        for path in plan.remove where (try? FileManager.default.removeItem(at: files.root.appending(path: path))) != nil {
            report.filesRemoved += 1
        }
        Self.removeEmptyFolders(in: files.attachments, depth: 2)
        let plainSizes = Dictionary(
            records.map { (row: Row) -> (String, Int64) in (row["id"], row["size"]) },
            uniquingKeysWith: { first, _ in first })
        if !plan.markMissing.isEmpty || !plan.markPresent.isEmpty || !plan.forget.isEmpty {
            try await database.write { db in
                let byID = Dictionary(known.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
                // Each only if the state is still the one read: a transfer may have moved it since.
                for id in plan.markMissing {
                    try db.execute(
                        sql: "UPDATE ferry_attachment_files SET state = ?, transferred = 0, reason = NULL WHERE id = ? AND state = ?",
                        arguments: [AttachmentFileRecord.State.missing, id, byID[id]?.state])
                }
                for id in plan.markPresent {
                    let size = plainSizes[id] ?? 0
                    try db.execute(
                        sql: """
                            INSERT INTO ferry_attachment_files(id, state, transferred) VALUES (?, ?, ?)
                            ON CONFLICT(id) DO UPDATE SET state = excluded.state, transferred = excluded.transferred, reason = NULL
                            WHERE state IS NOT excluded.state
                            """, arguments: [id, AttachmentFileRecord.State.uploaded, size])
                }
                for id in plan.forget {
                    _ = try AttachmentFileRecord.deleteOne(db, key: id)
                }
            }
        }
        report.markedMissing = plan.markMissing.count
        report.markedPresent = plan.markPresent.count
        report.evicted = try await AttachmentCache(database: database).enforceLimit()
        return report
    }

    /// Regular files `depth` folders down from `folder`, by path relative
    /// to it, with their sizes.
    private static func files(in folder: URL, depth: Int) -> [String: Int64] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [:] }
        var found: [String: Int64] = [:]
        for name in names {
            let url = folder.appending(path: name)
            if depth > 1 {
                for (path, size) in files(in: url, depth: depth - 1) { found[name + "/" + path] = size }
            } else if let size = AttachmentFiles.size(of: url), !AttachmentFiles.isFolder(url) {
                found[name] = size
            }
        }
        return found
    }

    private static func removeEmptyFolders(in folder: URL, depth: Int) {
        guard depth > 0, let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
        for name in names {
            let url = folder.appending(path: name)
            guard AttachmentFiles.isFolder(url) else { continue }
            removeEmptyFolders(in: url, depth: depth - 1)
            // rmdir only removes an empty folder: a file added meanwhile keeps it.
            _ = rmdir(url.path)
        }
    }
}
