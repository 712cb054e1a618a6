import Ferry
import Foundation

/// A note's attachments: files beside the database, synced by Ferry.
///
/// ```swift
/// let photo = try await notes.attach(file: url, to: "3fa1")
/// let path = try await notes.openAttachment(photo.id, copyTo: nil)
/// ```
extension NotesLibrary {
    public func attach(file: URL, to id: String) async throws -> Attachment {
        let note = try show(id)
        guard FileManager.default.isReadableFile(atPath: file.path) else { throw NotesError(.failure, "cannot read \(file.path)") }
        return try await database.attachments.add(file: file, to: "note", row: note.id)
    }

    public func attachments(of id: String) throws -> [Attachment] {
        try database.attachments.list(table: "note", row: try show(id).id)
    }

    /// The attachment's file here (fetched from the server first if it is
    /// not), or a checked copy at `copyTo`.
    /// Removes an attachment (any unique prefix of its id) from its note,
    /// on every device at the next sync.
    @discardableResult
    public func removeAttachment(_ prefix: String) async throws -> Attachment {
        let id = try await database.read { db in try Self.resolve(prefix, table: "ferry_attachments", label: "attachment", db) }
        guard let attachment = try database.attachments.attachment(id: id) else { throw NotesError(.notFound, "no attachment \(prefix)") }
        let scope = try await database.read { db in try Note.fetchOne(db, key: attachment.rowID)?.scope }
        if let scope { try await database.read { db in try Self.requireWritable(scope, db) } }
        try await database.attachments.remove(attachment)
        return attachment
    }

    public func openAttachment(_ prefix: String, copyTo destination: URL?) async throws -> URL {
        let id = try await database.read { db in try Self.resolve(prefix, table: "ferry_attachments", label: "attachment", db) }
        guard let attachment = try database.attachments.attachment(id: id) else { throw NotesError(.notFound, "no attachment \(prefix)") }
        if try database.attachments.localURL(for: attachment) == nil {
            let session = try requireSession()
            do {
                try await engine().fetch(attachment)
            } catch {
                throw Self.explain(error, server: session.server)
            }
        }
        if let destination {
            try database.attachments.export(attachment, to: destination)
            return destination
        }
        // A copy named as the attached file (its extension tells the system what opens it), in a folder only this user reads.
        let folder = FileManager.default.temporaryDirectory.appending(path: "ferry-notes-\(getuid())").appending(path: String(attachment.id.prefix(16)))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: folder.deletingLastPathComponent().path)
        let name = (attachment.name ?? "").split(separator: "/").last.map(String.init).flatMap { $0.isEmpty || $0.hasPrefix(".") ? nil : $0 }
        let copy = folder.appending(path: name ?? attachment.id)
        let size = (try? FileManager.default.attributesOfItem(atPath: copy.path))?[.size] as? Int64
        if size != attachment.size {
            try? FileManager.default.removeItem(at: copy)
            try database.attachments.export(attachment, to: copy)
        }
        return copy
    }
}
