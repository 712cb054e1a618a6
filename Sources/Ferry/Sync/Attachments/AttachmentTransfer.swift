import FerryProtocol
import Foundation
import GRDB
import Logging

/// Moves attachment bytes between this device and the server's blob store:
/// uploads resume from the server's offset, downloads from the bytes
/// already in `temp/`, and a download is verified against its SHA-256
/// before it is renamed into place (a file that fails is never returned).
/// A transfer cut by the network is retried at once with the engine's
/// backoff, each retry continuing where the last one stopped.
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
    var retry = RetryPolicy()
    let logger: Logger
    /// The clock retries wait on and the source of their jitter: the
    /// engine's, so a test that drives the engine's time drives these too.
    var clock: any Clock<Duration> = ContinuousClock()
    var random: @Sendable () -> Double = { Double.random(in: 0..<1) }

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
        // One read for both: every sync, even one with nothing to upload, pays for it.
        let (pending, pendingRecheck) = try await database.read { db in
            let pending = try AttachmentRecord.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT a.* FROM ferry_attachments a JOIN ferry_attachment_files f ON f.id = a.id
                        WHERE f.state IN (?, ?, ?) ORDER BY a.created_at
                        """),
                arguments: [
                    AttachmentFileRecord.State.localOnly, AttachmentFileRecord.State.uploading,
                    AttachmentFileRecord.State.failed,
                ])
            let recheck = try Set(
                String.fetchAll(
                    db.cachedStatement(sql: "SELECT id FROM ferry_attachment_files WHERE reason = ?"),
                    arguments: [AttachmentFileRecord.recheckReason]))
            return (pending, recheck)
        }
        var report = Report()
        for record in pending {
            try Task.checkCancellation()
            let file = files.file(of: record)
            // A failed download has no file here: it is fetched, not sent.
            guard files.isWhole(file, size: record.size) else { continue }
            do {
                let scope = record.scope ?? userScope
                var offset: Int64 = 0
                try await retrying {
                    offset = try await transport.blobOffset(scope: scope, sha256: record.sha256, token: token) ?? 0
                    if offset < record.size {
                        try await setState(record.id, .uploading, transferred: offset)
                        let progress = progressRecorder(record, .uploading, step: AttachmentStep.uploaded)
                        let reader = try files.reader(file, from: offset)
                        defer { reader.close() }
                        offset = try await transport.uploadBlob(
                            scope: scope, sha256: record.sha256, from: reader,
                            size: record.size, token: token, progress: progress)
                    }
                }
                if offset >= record.size {
                    try await setState(record.id, .uploaded, transferred: record.size)
                    report.uploaded += 1
                } else {
                    try await setState(record.id, .uploading, transferred: offset)
                }
            } catch is CancellationError {
                throw CancellationError()
            } catch SyncTransportError.http(status: 403, let error, _) where pendingRecheck.contains(record.id) {
                // A re-check in a scope this user may only read: a writer's device refills the server.
                try await setState(record.id, .uploaded, transferred: record.size)
                logger.info("an attachment the server lacks is left to a writer", metadata: ["attachment": "\(record.id)", "error": "\(error.map { "\($0)" } ?? "no detail")"])
            } catch {
                report.failed += 1
                logger.warning("an attachment upload failed", metadata: ["attachment": "\(record.id)", "error": "\(error)"])
                try await setState(record.id, .failed, transferred: 0, reason: "upload: \(error)")
                // Out of reach after every retry: the others would fail the same way.
                if case .transient = SyncFailure(error) { break }
            }
        }
        return report
    }

    /// Downloads every attachment of an eager table that is not on this device.
    func downloadEager(token: String?) async throws -> Report {
        let eager = database.attachmentSettings.downloads.filter { $0.value == .eager }.map(\.key)
        guard !eager.isEmpty else { return Report() }
        let files = try database.attachments.files()
        let wanted = try await database.read { db in
            try AttachmentRecord.filter(eager.contains(AttachmentRecord.Columns.table)).fetchAll(db)
        }
        var report = Report()
        for record in wanted where !files.isWhole(files.file(of: record), size: record.size) {
            try Task.checkCancellation()
            do {
                _ = try await download(record, token: token)
                report.downloaded += 1
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                report.failed += 1
                logger.warning("an attachment download failed", metadata: ["attachment": "\(record.id)", "error": "\(error)"])
                if case .transient = SyncFailure(error) { break }
            }
        }
        return report
    }

    /// Fetches one attachment's bytes into place, continuing a download
    /// interrupted before, and returns its file. Two downloads of one
    /// attachment (an open during a sync) take turns: the second finds the
    /// file in place.
    ///
    /// - throws: ``FerryError`` `.attachmentCorrupted` when the bytes do not
    ///   hash to the attachment's SHA-256 (the partial file is removed).
    func download(_ record: AttachmentRecord, token: String?) async throws -> URL {
        let files = try database.attachments.files()
        let settings = database.attachmentSettings
        return try await settings.downloadTurns.run(record.id) {
            try await settings.working(on: [record.id]) {
                try await fetch(record, files: files, token: token)
            }
        }
    }

    private func fetch(_ record: AttachmentRecord, files: AttachmentFiles, token: String?) async throws -> URL {
        let destination = files.file(of: record)
        if files.isWhole(destination, size: record.size) { return destination }
        let temp = files.download(of: record)
        try FileManager.default.createDirectory(at: files.temp, withIntermediateDirectories: true)
        if (AttachmentFiles.size(of: temp) ?? 0) > files.format.storedSize(plain: record.size) {
            try? FileManager.default.removeItem(at: temp)
        }
        do {
            let writer = try files.writer(appendingTo: temp)
            defer { writer.close() }
            try await setState(record.id, .downloading, transferred: writer.held)
            try await retrying {
                // A retry continues from the bytes the last attempt wrote.
                guard writer.held < record.size else { return }
                try await transport.downloadBlob(
                    scope: record.scope ?? userScope, sha256: record.sha256, into: writer,
                    token: token,
                    progress: progressRecorder(record, .downloading, step: AttachmentStep.downloaded))
                // A body that ended early is a cut connection: retried, continuing, and the bytes kept.
                guard writer.held >= record.size else {
                    throw SyncTransportError.unreachable("the download of attachment \(record.id) ended after \(writer.held) of \(record.size) bytes")
                }
            }
            try writer.finish()
            let (size, digest) = try files.digest(of: temp)
            guard size == record.size, digest == record.sha256 else {
                try? FileManager.default.removeItem(at: temp)
                throw FerryError(
                    .attachmentCorrupted,
                    "attachment \(record.id) downloaded as \(size) bytes hashing to \(digest), not \(record.size) bytes hashing to \(record.sha256); it was discarded")
            }
            try files.place(temp, at: destination)
            let now = database.wallClock.nowMilliseconds()
            try await database.write { db in
                var file = try AttachmentFileRecord.fetchOne(db, key: record.id) ?? AttachmentFileRecord(id: record.id, state: .uploaded)
                file.state = .uploaded
                file.transferred = record.size
                file.reason = nil
                file.lastOpenedAt = now
                try file.save(db)
            }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            if (error as? FerryError)?.code == .attachmentCorrupted { try? FileManager.default.removeItem(at: temp) }
            let missing = (error as? SyncTransportError).map { if case .http(404, _, _) = $0 { true } else { false } } ?? false
            try await setState(record.id, missing ? .missing : .failed, transferred: 0, reason: "download: \(error)")
            throw error
        }
        // Over the cache limit: make room, keeping the file just fetched.
        try await AttachmentCache(database: database).enforceLimit(keeping: record.id)
        return destination
    }

    /// Records a transfer's progress on the attachment as it goes: a write
    /// queued (never awaited) each time another 1 MiB, or 1/100 of the
    /// file, has moved.
    private func progressRecorder(
        _ record: AttachmentRecord, _ state: AttachmentFileRecord.State,
        step: @escaping @Sendable (Int64) -> AttachmentStep
    ) -> BlobProgress {
        let writer = database.writer
        let steps = database.attachmentSettings.steps
        let stride = max(1 << 20, record.size / 100)
        let lastRecorded = Locked<Int64>(0)
        let id = record.id
        return { moved in
            steps?(step(moved))
            let due = lastRecorded.withLock { last in
                guard moved - last >= stride || moved == record.size else { return false }
                last = moved
                return true
            }
            guard due else { return }
            writer.asyncWriteWithoutTransaction { db in
                try? db.execute(
                    sql: "UPDATE ferry_attachment_files SET transferred = ? WHERE id = ? AND state = ?",
                    arguments: [moved, id, state])
            }
        }
    }

    /// Runs `body` again after a transient failure (the network, a busy
    /// server), waiting as the retry policy says, up to its attempts per sync.
    private func retrying(_ body: () async throws -> Void) async throws {
        var attempt = 0
        while true {
            do {
                return try await body()
            } catch {
                attempt += 1
                guard attempt < retry.attemptsPerSync else { throw error }
                let retryAfter: Duration?
                switch (SyncFailure(error), error as? SyncTransportError) {
                case (.transient(let after), _): retryAfter = after
                // An upload the server has not yet seen cut still holds the
                // blob, or moved its offset since the HEAD: ask again.
                case (_, .http(409, let body, _)?) where body?.code == .uploadOffsetMismatch || body?.code == .alreadyExists:
                    retryAfter = nil
                default: throw error
                }
                let delay = retry.delay(attempt: attempt - 1, retryAfter: retryAfter, unit: random())
                logger.debug("an attachment transfer is retried", metadata: ["error": "\(error)", "delay": "\(delay)"])
                try await clock.sleep(for: delay)
            }
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
