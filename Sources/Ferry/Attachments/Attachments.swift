import FerrySQLite
import Foundation
import FerryProtocol
import GRDB
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Files attached to rows of synced tables: photos, audio, PDFs. The bytes
/// live in files beside the database; their metadata is a synced table, so
/// every device that reads the row's scope learns of them, and the sync
/// engine moves the bytes (``SyncEngine/sync()`` uploads what was added here
/// and downloads what eager tables gained; ``SyncEngine/open(_:)`` fetches
/// one on demand).
///
/// ```swift
/// let photo = try await database.attachments.add(file: cameraURL, to: "note", row: noteID,
///                                                contentType: "image/jpeg")
/// for try await list in database.attachments.observe(table: "note", row: noteID) {
///     gallery.show(list)
/// }
/// let url = try await engine.open(photo)   // local, or downloaded and verified first
/// ```
///
/// Adding is crash-safe in two phases: the bytes are written to `staging/`,
/// synced and hashed, renamed into `attachments/<table>/<row>/<id>`, and
/// only then is the metadata recorded (and its upload queued) in one
/// transaction. A crash between the two leaves a file in `staging/` or a
/// file without metadata, never metadata without its file.
public struct Attachments: Sendable {
    let database: FerryDatabase

    /// Attaches a copy of the file at `url` to a row.
    ///
    /// - throws: ``FerryError`` `.attachmentNotFound` if the table is not
    ///   synced or has no such row; `.invalidConfiguration` for an in-memory
    ///   database with no ``FerryConfiguration/attachmentsDirectory``;
    ///   `.storageFull` when the disk has no room for the copy (nothing is
    ///   kept of it).
    @discardableResult
    public func add(
        file url: URL, to table: String, row rowID: String, name: String? = nil,
        contentType: String? = nil
    ) async throws -> Attachment {
        try await add(Self.chunks(of: url), to: table, row: rowID, name: name ?? url.lastPathComponent, contentType: contentType)
    }

    /// Attaches `data` to a row.
    @discardableResult
    public func add(
        data: Data, to table: String, row rowID: String, name: String? = nil,
        contentType: String? = nil
    ) async throws -> Attachment {
        let chunks = AsyncThrowingStream<Data, any Error> { continuation in
            continuation.yield(data)
            continuation.finish()
        }
        return try await add(chunks, to: table, row: rowID, name: name, contentType: contentType)
    }

    /// Attaches the bytes an async sequence yields (a recording, a
    /// download): written as they come, never held whole.
    @discardableResult
    public func add(
        _ chunks: some AsyncSequence<Data, any Error>, to table: String, row rowID: String,
        name: String? = nil, contentType: String? = nil
    ) async throws -> Attachment {
        let files = try self.files()
        guard let layout = database.layouts[table], table != AttachmentRecord.databaseTableName else {
            throw FerryError(.attachmentNotFound, "table `\(table)` is not synced; attachments belong to rows of synced tables")
        }
        let settings = database.attachmentSettings
        let id = UUID().uuidString.lowercased()
        return try await settings.working(on: [id]) {
            let staged = try await files.stage(chunks, as: id)
            settings.steps?(.staged)
            let destination = files.file(table: table, row: rowID, id: id)
            do {
                try files.place(staged.url, at: destination)
                settings.steps?(.placed)
                let now = database.wallClock.nowMilliseconds()
                let attachment = try await database.write { db in
                    let scope = try Self.scope(of: rowID, in: layout, db)
                    let record = AttachmentRecord(
                        id: id, table: table, rowID: rowID, scope: scope, name: name,
                        contentType: contentType, size: staged.size, sha256: staged.sha256,
                        createdAt: now)
                    try record.insert(db)
                    let file = AttachmentFileRecord(id: id, state: .localOnly, lastOpenedAt: now)
                    try file.insert(db)
                    settings.steps?(.recorded)
                    return record.attachment(file)
                }
                settings.steps?(.committed)
                return attachment
            } catch {
                try? FileManager.default.removeItem(at: staged.url)
                try? FileManager.default.removeItem(at: destination)
                throw error
            }
        }
    }

    /// The scope of the row an attachment is added to (`nil`: the user's own).
    private static func scope(of rowID: String, in layout: TableLayout, _ db: Database) throws -> String? {
        let table = layout.table.name
        let key = SQLText.identifier(layout.primaryKey)
        switch layout.table.scope {
        case .user:
            guard
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM \(SQLText.identifier(table)) WHERE \(key) = ?",
                    arguments: [rowID]) ?? false
            else { throw noRow(table, rowID) }
            return nil
        case .column(let column):
            let rows = try Row.fetchAll(
                db, sql: "SELECT \(SQLText.identifier(column)) FROM \(SQLText.identifier(table)) WHERE \(key) = ?",
                arguments: [rowID])
            guard let row = rows.first else { throw noRow(table, rowID) }
            return row[0]
        }
    }

    /// A row's attachments, oldest first.
    public func list(table: String, row rowID: String) throws -> [Attachment] {
        try database.read { db in try Self.list(table: table, row: rowID, db) }
    }

    /// A row's attachments as an async sequence that yields after every
    /// change, states included.
    public func observe(table: String, row rowID: String) -> AsyncValueObservation<[Attachment]> {
        ValueObservation.tracking { db in try Self.list(table: table, row: rowID, db) }
            .removeDuplicates().values(in: database.writer)
    }

    /// One attachment by id, as it stands now.
    public func attachment(id: String) throws -> Attachment? {
        try database.read { db in
            try AttachmentRecord.fetchOne(db, key: id).map { $0.attachment(try AttachmentFileRecord.fetchOne(db, key: id)) }
        }
    }

    /// The file holding the attachment's bytes on this device, or `nil`
    /// when they are not here (``SyncEngine/open(_:)`` fetches them).
    ///
    /// - throws: ``FerryError`` `.invalidConfiguration` when attachment files
    ///   are sealed at rest (``FerryConfiguration/attachmentCipher``): their
    ///   files hold no readable bytes; use ``data(for:)`` or
    ///   ``export(_:to:)``.
    public func localURL(for attachment: Attachment) throws -> URL? {
        let files = try self.files()
        guard !files.format.isSealed else {
            throw FerryError(
                .invalidConfiguration,
                "attachment files are sealed at rest; read attachment \(attachment.id) with data(for:), or export(_:to:) a checked copy")
        }
        return try wholeFile(of: attachment, in: files)
    }

    /// The attachment's bytes, read whole and checked against its hash
    /// (and, for a sealed file, chunk by chunk as it is opened).
    ///
    /// - throws: ``FerryError`` `.attachmentNotFound` when they are not on
    ///   this device; `.attachmentCorrupted` when the file no longer hashes
    ///   to the attachment's SHA-256, or a sealed chunk fails to open (it is
    ///   never returned).
    public func data(for attachment: Attachment) throws -> Data {
        let files = try self.files()
        let reader = try files.reader(try here(attachment, in: files))
        defer { reader.close() }
        var data = Data(capacity: Int(attachment.size))
        var hash = SHA256Digest()
        while let chunk = try reader.next() {
            hash.update(chunk)
            data.append(chunk)
        }
        try Self.check(hash.finalize(), size: Int64(data.count), of: attachment)
        return data
    }

    /// Writes a copy of the attachment's bytes to `destination` (replacing
    /// what is there), streamed a chunk at a time and checked before it
    /// appears: a copy that fails the check is deleted, never left behind.
    /// The way to hand a sealed attachment to code that wants a file (a
    /// video player, a share sheet); the copy is not sealed, so remove it
    /// when done.
    ///
    /// ```swift
    /// let copy = FileManager.default.temporaryDirectory.appending(path: attachment.name ?? attachment.id)
    /// try database.attachments.export(attachment, to: copy)
    /// defer { try? FileManager.default.removeItem(at: copy) }
    /// ```
    ///
    /// - throws: as ``data(for:)``.
    public func export(_ attachment: Attachment, to destination: URL) throws {
        let files = try self.files()
        let reader = try files.reader(try here(attachment, in: files))
        defer { reader.close() }
        let partial = destination.deletingLastPathComponent().appending(path: ".\(destination.lastPathComponent).ferry-partial")
        try? FileManager.default.removeItem(at: partial)
        let writer = try BlobWriter(appendingTo: partial)
        var hash = SHA256Digest()
        do {
            while let chunk = try reader.next() {
                hash.update(chunk)
                try writer.write(chunk)
            }
            try writer.finish()
            try Self.check(hash.finalize(), size: writer.held, of: attachment)
            // rename(2) replaces what is there in one step.
            guard rename(partial.path, destination.path) == 0 else { throw AttachmentFiles.failure("move into place", destination) }
        } catch {
            writer.close()
            try? FileManager.default.removeItem(at: partial)
            throw error
        }
    }

    /// Removes an attachment: its metadata (synced as a delete) and its
    /// file here. The server's copy is collected once no row refers to it.
    public func remove(_ attachment: Attachment) async throws {
        let files = try self.files()
        try await database.write { db in
            _ = try AttachmentRecord.deleteOne(db, key: attachment.id)
            _ = try AttachmentFileRecord.deleteOne(db, key: attachment.id)
        }
        try? FileManager.default.removeItem(at: files.file(table: attachment.table, row: attachment.rowID, id: attachment.id))
    }

    // MARK: - Internals

    func files() throws -> AttachmentFiles {
        try database.attachmentSettings.files()
    }

    /// The attachment's whole file here, marked as opened now, or `nil`.
    func wholeFile(of attachment: Attachment, in files: AttachmentFiles) throws -> URL? {
        let url = files.file(table: attachment.table, row: attachment.rowID, id: attachment.id)
        guard files.isWhole(url, size: attachment.size) else { return nil }
        let now = database.wallClock.nowMilliseconds()
        try database.write { db in
            try db.execute(sql: "UPDATE ferry_attachment_files SET last_opened_at = ? WHERE id = ?", arguments: [now, attachment.id])
        }
        return url
    }

    private func here(_ attachment: Attachment, in files: AttachmentFiles) throws -> URL {
        guard let url = try wholeFile(of: attachment, in: files) else {
            throw FerryError(.attachmentNotFound, "attachment \(attachment.id) is not on this device; fetch it through the sync engine")
        }
        return url
    }

    private static func check(_ sha256: String, size: Int64, of attachment: Attachment) throws {
        guard size == attachment.size, sha256 == attachment.sha256 else {
            throw FerryError(
                .attachmentCorrupted,
                "attachment \(attachment.id)'s file holds \(size) bytes hashing to \(sha256), not \(attachment.size) hashing to \(attachment.sha256)")
        }
    }

    static func list(table: String, row rowID: String, _ db: Database) throws -> [Attachment] {
        let records = try AttachmentRecord.filter(AttachmentRecord.Columns.table == table && AttachmentRecord.Columns.rowID == rowID)
            .order(AttachmentRecord.Columns.createdAt, AttachmentRecord.Columns.id).fetchAll(db)
        return try records.map { $0.attachment(try AttachmentFileRecord.fetchOne(db, key: $0.id)) }
    }

    static func noRow(_ table: String, _ rowID: String) -> FerryError {
        FerryError(.attachmentNotFound, "`\(table)` has no row \(rowID) to attach a file to")
    }

    /// A file's bytes in chunks of 1 MiB, read as they are consumed.
    static func chunks(of url: URL) -> AsyncThrowingStream<Data, any Error> {
        let reader = FileChunks(url: url)
        return AsyncThrowingStream { try reader.next() }
    }
}

/// Reads a file a chunk at a time for one consumer.
final class FileChunks: @unchecked Sendable {
    private let url: URL
    private var handle: FileHandle?
    private var done = false

    init(url: URL) { self.url = url }

    func next() throws -> Data? {
        guard !done else { return nil }
        if handle == nil { handle = try FileHandle(forReadingFrom: url) }
        guard let chunk = try handle?.read(upToCount: 1 << 20), !chunk.isEmpty else {
            try? handle?.close()
            done = true
            return nil
        }
        return chunk
    }
}

extension FerryDatabase {
    /// Files attached to rows of synced tables.
    public var attachments: Attachments { Attachments(database: self) }
}
