import FerryProtocol
import Foundation
import GRDB
import Logging

/// Moves attachment bytes between this device and the server's blob store:
/// uploads resume from the server's offset, downloads from the bytes
/// already in `temp/`, and a download is verified against its SHA-256
/// before it is renamed into place (a file that fails is never returned).
///
/// ```swift
/// let transfer = AttachmentTransfer(database: database, transport: transport, userScope: "user:alice", logger: logger)
/// let report = await transfer.uploadPending(token: token)
/// let url = try await transfer.download(record, token: token)
/// ```
struct AttachmentTransfer: Sendable {
    let database: FerryDatabase
    let transport: any SyncTransport
    let userScope: String
    let logger: Logger

    struct Report: Sendable, Equatable {
        var uploaded = 0
        var downloaded = 0
        var failed = 0
    }

    /// Uploads every attachment added on this device that the server does
    /// not hold whole yet. A failure is recorded on the attachment (and
    /// retried at the next sync), not thrown.
    func uploadPending(token: String?) async throws -> Report {
        let files = try database.attachments.files()
        let pending = try await database.read { db in
            try AttachmentRecord.fetchAll(db, sql: """
                SELECT a.* FROM ferry_attachments a JOIN ferry_attachment_files f ON f.id = a.id
                WHERE f.state IN (?, ?, ?) ORDER BY a.created_at
                """, arguments: [AttachmentFileRecord.State.localOnly, AttachmentFileRecord.State.uploading,
                                 AttachmentFileRecord.State.failed])
        }
        var report = Report()
        for record in pending {
            try Task.checkCancellation()
            let file = files.file(of: record)
            // A failed download has no file here: it is fetched, not sent.
            guard AttachmentFiles.size(of: file) == record.size else { continue }
            do {
                let scope = record.scope ?? userScope
                var offset = try await transport.blobOffset(scope: scope, sha256: record.sha256, token: token) ?? 0
                if offset < record.size {
                    try await setState(record.id, .uploading, transferred: offset)
                    offset = try await transport.uploadBlob(scope: scope, sha256: record.sha256, file: file, offset: offset,
                                                            size: record.size, token: token)
                }
                if offset >= record.size {
                    try await setState(record.id, .uploaded, transferred: record.size)
                    report.uploaded += 1
                } else {
                    try await setState(record.id, .uploading, transferred: offset)
                }
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                report.failed += 1
                logger.warning("an attachment upload failed", metadata: ["attachment": "\(record.id)", "error": "\(error)"])
                try await setState(record.id, .failed, transferred: 0, reason: "upload: \(error)")
            }
        }
        return report
    }

    /// Downloads every attachment of an eager table that is not on this device.
    func downloadEager(token: String?) async throws -> Report {
        let eager = database.attachmentDownloads.filter { $0.value == .eager }.map(\.key)
        guard !eager.isEmpty else { return Report() }
        let files = try database.attachments.files()
        let wanted = try await database.read { db in
            try AttachmentRecord.filter(eager.contains(AttachmentRecord.Columns.table)).fetchAll(db)
        }
        var report = Report()
        for record in wanted where AttachmentFiles.size(of: files.file(of: record)) != record.size {
            try Task.checkCancellation()
            do {
                _ = try await download(record, token: token)
                report.downloaded += 1
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                report.failed += 1
                logger.warning("an attachment download failed", metadata: ["attachment": "\(record.id)", "error": "\(error)"])
            }
        }
        return report
    }

    /// Fetches one attachment's bytes into place, continuing a download
    /// interrupted before, and returns its file.
    ///
    /// - throws: ``FerryError`` `.attachmentCorrupted` when the bytes do not
    ///   hash to the attachment's SHA-256 (the partial file is removed).
    func download(_ record: AttachmentRecord, token: String?) async throws -> URL {
        let files = try database.attachments.files()
        let destination = files.file(of: record)
        if AttachmentFiles.size(of: destination) == record.size { return destination }
        let temp = files.download(of: record)
        try FileManager.default.createDirectory(at: files.temp, withIntermediateDirectories: true)
        var held = AttachmentFiles.size(of: temp) ?? 0
        if held > record.size {
            try? FileManager.default.removeItem(at: temp)
            held = 0
        }
        do {
            try await setState(record.id, .downloading, transferred: held)
            if held < record.size {
                try await transport.downloadBlob(scope: record.scope ?? userScope, sha256: record.sha256, into: temp,
                                                 from: held, token: token)
            }
            let (size, digest) = try AttachmentFiles.digest(of: temp)
            guard size == record.size, digest == record.sha256 else {
                try? FileManager.default.removeItem(at: temp)
                throw FerryError(.attachmentCorrupted,
                    "attachment \(record.id) downloaded as \(size) bytes hashing to \(digest), not \(record.size) bytes hashing to \(record.sha256); it was discarded")
            }
            try files.place(temp, at: destination)
            try await setState(record.id, .uploaded, transferred: record.size)
            return destination
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            let missing = (error as? SyncTransportError).map { if case .http(404, _, _) = $0 { true } else { false } } ?? false
            try await setState(record.id, missing ? .missing : .failed, transferred: 0, reason: "download: \(error)")
            throw error
        }
    }

    private func setState(_ id: String, _ state: AttachmentFileRecord.State, transferred: Int64, reason: String? = nil) async throws {
        try await database.write { db in
            var file = try AttachmentFileRecord.fetchOne(db, key: id) ?? AttachmentFileRecord(id: id, state: state)
            file.state = state
            file.transferred = transferred
            file.reason = reason
            try file.save(db)
        }
    }
}
