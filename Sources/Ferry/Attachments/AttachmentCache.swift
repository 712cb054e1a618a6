import Foundation
import GRDB

/// Keeps downloaded attachment files within
/// ``FerryConfiguration/attachmentCacheLimit``: the files opened least
/// recently go first (their state becomes ``AttachmentState/missing``, and
/// they download again when opened); a file whose bytes or row the server
/// does not hold yet never goes. The limit counts the bytes of every attachment file on
/// the device, this device's own adds included.
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
            try Row.fetchAll(
                db,
                sql: """
                    SELECT a.id, a.tbl, a.row_id, a.size, f.state, f.last_opened_at,
                           EXISTS (SELECT 1 FROM ferry_outbox AS o INDEXED BY ferry_outbox_pending WHERE o.tbl = 'ferry_attachments' AND o.row_id = a.id
                                   AND o.\(OutboxRecord.State.pending.condition)) AS unpushed
                    FROM ferry_attachments a JOIN ferry_attachment_files f ON f.id = a.id
                    """)
        }
        var onDevice: [AttachmentEviction.File] = []
        var paths: [String: URL] = [:]
        for entry in entries {
            let id: String = entry["id"]
            let size: Int64 = entry["size"]
            let url = files.file(table: entry["tbl"], row: entry["row_id"], id: id)
            guard files.isWhole(url, size: size) else { continue }
            let state: AttachmentFileRecord.State? = entry["state"]
            paths[id] = url
            // Evictable once the server holds both the bytes and the row that names them.
            let unpushed: Bool = entry["unpushed"]
            onDevice.append(
                .init(
                    id: id, size: size, uploaded: state == .uploaded && !unpushed && !settings.isInFlight(id),
                    lastOpenedAt: entry["last_opened_at"]))
        }
        let evicted = AttachmentEviction(limit: limit, keeping: kept).evict(onDevice)
        guard !evicted.isEmpty else { return 0 }
        // Only what is still as read (uploaded, not opened since) is evicted.
        let opened = Dictionary(onDevice.map { ($0.id, $0.lastOpenedAt) }, uniquingKeysWith: { first, _ in first })
        let gone = try await database.write { db in
            try evicted.filter { id in
                try db.execute(
                    sql: """
                        UPDATE ferry_attachment_files SET state = ?, transferred = 0, reason = NULL
                        WHERE id = ? AND state = ? AND last_opened_at IS ?
                        """, arguments: [AttachmentFileRecord.State.missing, id, AttachmentFileRecord.State.uploaded, opened[id] ?? nil])
                return db.changesCount == 1
            }
        }
        for id in gone {
            if let url = paths[id] { try? FileManager.default.removeItem(at: url) }
        }
        return gone.count
    }
}
