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
        guard FileManager.default.isReadableFile(atPath: file.path) else { throw NotesError(.notFound, "cannot read \(file.path)") }
        return try await database.attachments.add(file: file, to: "note", row: note.id)
    }

    public func attachments(of id: String) throws -> [Attachment] {
        try database.attachments.list(table: "note", row: try show(id).id)
    }

    /// The attachment's file here (fetched from the server first if it is
    /// not), or a checked copy at `copyTo`.
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
        guard let url = try database.attachments.localURL(for: attachment) else { throw NotesError(.notFound, "attachment \(prefix) is not here") }
        return url
    }
}
