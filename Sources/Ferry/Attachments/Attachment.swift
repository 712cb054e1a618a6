import Foundation

/// A file attached to a row of a synced table: its metadata (synced to
/// every device that reads the row's scope) and where this device's copy
/// of its bytes stands.
///
/// ```swift
/// let photo = try await database.attachments.add(file: pickedURL, to: "note", row: noteID, contentType: "image/jpeg")
/// print(photo.size, photo.sha256, photo.state)   // 2_048_000, "9f86…", .localOnly
/// ```
public struct Attachment: Sendable, Hashable, Identifiable {
    public var id: String
    /// The synced table and row it belongs to.
    public var table: String
    public var rowID: String
    /// The row's scope (`nil`: the user's own).
    public var scope: String?
    public var name: String?
    public var contentType: String?
    /// Bytes.
    public var size: Int64
    /// The SHA-256 of the bytes, lowercase hex: the blob's name on the server.
    public var sha256: String
    public var createdAt: Date
    /// Where this device's copy stands.
    public var state: AttachmentState
}

/// Where this device's copy of an attachment's bytes stands.
public enum AttachmentState: Sendable, Hashable {
    /// Added here, not yet on the server.
    case localOnly
    /// On its way to the server: `sent` of the attachment's bytes are there.
    case uploading(sent: Int64)
    /// On the server and on this device.
    case uploaded
    /// On its way here: `received` bytes so far.
    case downloading(received: Int64)
    /// Not on this device (added elsewhere, evicted, or its file was lost):
    /// fetched on open, or at the next sync for an eager table.
    case missing
    /// The last transfer failed; it is tried again at the next sync.
    case failed(reason: String)
}

/// When attachments added on other devices download.
public enum AttachmentDownloadPolicy: Sendable, Hashable {
    /// After every sync that brings them.
    case eager
    /// When first opened (``SyncEngine/open(_:)``).
    case onOpen
}
