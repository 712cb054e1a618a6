import Foundation
import GRDB

/// One row of `ferry_attachments`: an attachment's metadata, synced like
/// any row (its scope is the scope of the row it belongs to).
struct AttachmentRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "ferry_attachments"

    var id: String
    var table: String
    var rowID: String
    var scope: String?
    var name: String?
    var contentType: String?
    var size: Int64
    var sha256: String
    /// Unix milliseconds.
    var createdAt: Int64

    enum CodingKeys: String, CodingKey {
        case id, table = "tbl", rowID = "row_id", scope, name, contentType = "content_type", size, sha256
        case createdAt = "created_at"
    }

    enum Columns {
        static let id = Column(CodingKeys.id)
        static let table = Column(CodingKeys.table)
        static let rowID = Column(CodingKeys.rowID)
        static let createdAt = Column(CodingKeys.createdAt)
    }

    func attachment(_ file: AttachmentFileRecord?) -> Attachment {
        Attachment(
            id: id, table: table, rowID: rowID, scope: scope, name: name, contentType: contentType, size: size,
            sha256: sha256, createdAt: Date(timeIntervalSince1970: Double(createdAt) / 1000),
            state: file?.attachmentState ?? .missing)
    }
}

/// One row of `ferry_attachment_files`: where this device's copy of an
/// attachment's bytes stands. Never synced.
struct AttachmentFileRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "ferry_attachment_files"

    enum State: String, Codable, DatabaseValueConvertible, Sendable {
        case localOnly, uploading, uploaded, downloading, missing, failed
    }

    /// The `reason` of a file put back to `localOnly` to be checked against
    /// a server that lost history (``PageApplier/recheckUploads(of:_:)``).
    static let recheckReason = "recheck"

    var id: String
    var state: State
    /// Bytes sent or received by the transfer under way.
    var transferred: Int64 = 0
    var reason: String?
    /// Unix milliseconds: the cache evicts the least recently opened first.
    var lastOpenedAt: Int64?

    enum CodingKeys: String, CodingKey {
        case id, state, transferred, reason, lastOpenedAt = "last_opened_at"
    }

    enum Columns {
        static let id = Column(CodingKeys.id)
        static let state = Column(CodingKeys.state)
    }

    var attachmentState: AttachmentState {
        switch state {
        case .localOnly: .localOnly
        case .uploading: .uploading(sent: transferred)
        case .uploaded: .uploaded
        case .downloading: .downloading(received: transferred)
        case .missing: .missing
        case .failed: .failed(reason: reason ?? "unknown")
        }
    }
}
