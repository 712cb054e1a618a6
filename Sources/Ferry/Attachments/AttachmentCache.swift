import Foundation
import GRDB

/// Keeps downloaded attachment files within
/// ``FerryConfiguration/attachmentCacheLimit``: the files opened least
/// recently go first (their state becomes ``AttachmentState/missing``, and
/// they download again when opened); a file not yet uploaded never goes.
struct AttachmentCache: Sendable {
    let database: FerryDatabase

    /// Evicts until the files on this device fit the limit, if one is set.
    /// Returns how many files it evicted.
    @discardableResult
    func enforceLimit(keeping kept: String? = nil) async throws -> Int {
        guard let limit = database.attachmentSettings.cacheLimit else { return 0 }
        let files = try database.attachments.files()
        let settings = database.attachmentSettings
        let entries = try await database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT a.id, a.tbl, a.row_id, a.size, f.state, f.last_opened_at
                FROM ferry_attachments a JOIN ferry_attachment_files f ON f.id = a.id
                """)
        }
        var onDevice: [AttachmentEviction.File] = []
        var paths: [String: URL] = [:]
        for entry in entries {
            let id: String = entry["id"]
            let size: Int64 = entry["size"]
            let url = files.file(table: entry["tbl"], row: entry["row_id"], id: id)
            guard AttachmentFiles.size(of: url) == size else { continue }
            let state: AttachmentFileRecord.State? = entry["state"]
            paths[id] = url
            onDevice.append(.init(id: id, size: size, uploaded: state == .uploaded && !settings.isInFlight(id),
                                  lastOpenedAt: entry["last_opened_at"]))
        }
        let evicted = AttachmentEviction(limit: limit, keeping: kept).evict(onDevice)
        guard !evicted.isEmpty else { return 0 }
        try await database.write { db in
            for id in evicted {
                try db.execute(sql: "UPDATE ferry_attachment_files SET state = ?, transferred = 0, reason = NULL WHERE id = ? AND state = ?",
                               arguments: [AttachmentFileRecord.State.missing, id, AttachmentFileRecord.State.uploaded])
            }
        }
        for id in evicted {
            if let url = paths[id] { try? FileManager.default.removeItem(at: url) }
        }
        return evicted.count
    }
}
