import FerryProtocol
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where attachment files live under one root, and the file operations
/// that keep them safe: a new file is written in `staging/`, synced, hashed
/// while written and renamed into `attachments/<table>/<row>/<id>`; a
/// download grows in `temp/` and is renamed in only once verified. Every
/// file is in the directory's ``AttachmentFileFormat`` (plain, or sealed by
/// an ``AttachmentCipher``).
///
/// ```swift
/// let files = AttachmentFiles(root: directory, format: .plain)
/// let staged = try await files.stage(chunks, as: id)   // (url, size, sha256)
/// try files.place(staged.url, at: files.file(table: "note", row: "n1", id: id))
/// ```
struct AttachmentFiles: Sendable {
    let root: URL
    let format: AttachmentFileFormat

    var staging: URL { root.appending(path: "staging") }
    var temp: URL { root.appending(path: "temp") }
    var attachments: URL { root.appending(path: "attachments") }

    func file(table: String, row: String, id: String) -> URL {
        attachments.appending(path: Self.component(table)).appending(path: Self.component(row)).appending(path: Self.component(id))
    }

    func file(of record: AttachmentRecord) -> URL {
        file(table: record.table, row: record.rowID, id: record.id)
    }

    func download(of record: AttachmentRecord) -> URL {
        temp.appending(path: Self.component(record.id))
    }

    /// A path component for any text: a row id may hold `/` or `..`.
    static func component(_ text: String) -> String {
        let safe = text.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || "-_.".unicodeScalars.contains($0) }
        return safe && text != "." && text != ".." && !text.isEmpty && text.utf8.count <= 128
            ? text : "~" + text.utf8.map { String(format: "%02x", $0) }.joined().prefix(200)
    }

    struct Staged: Sendable {
        var url: URL
        var size: Int64
        var sha256: String
    }

    /// Writes `chunks` to `staging/<name>`, hashing as it goes, and syncs
    /// it to disk.
    func stage(_ chunks: some AsyncSequence<Data, any Error>, as name: String) async throws -> Staged {
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
        let url = staging.appending(path: Self.component(name))
        let writer = try BlobWriter(creating: url, format: format)
        var hash = SHA256Digest()
        do {
            for try await chunk in chunks {
                try writer.write(chunk)
                hash.update(chunk)
            }
            try writer.finish()
        } catch {
            writer.close()
            try? FileManager.default.removeItem(at: url)
            throw error
        }
        return Staged(url: url, size: writer.held, sha256: hash.finalize())
    }

    /// Whether `url` holds a whole file of an attachment of `size` bytes.
    func isWhole(_ url: URL, size: Int64) -> Bool {
        Self.size(of: url) == format.storedSize(plain: size)
    }

    /// The blob's bytes in `url` from `offset`.
    func reader(_ url: URL, from offset: Int64 = 0) throws -> BlobReader {
        try BlobReader(file: url, from: offset, format: format)
    }

    /// Appends to `url`, continuing what it holds.
    func writer(appendingTo url: URL) throws -> BlobWriter {
        try BlobWriter(appendingTo: url, format: format)
    }

    /// Renames `source` to `destination` (creating its folder), then syncs
    /// the folder so the rename survives a crash.
    func place(_ source: URL, at destination: URL) throws {
        let folder = destination.deletingLastPathComponent()
        // Maintenance removes empty folders: one removed between the two calls is made again.
        var attempts = 0
        while true {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            if rename(source.path, destination.path) == 0 { break }
            attempts += 1
            guard errno == ENOENT, attempts < 3 else { throw Self.failure("move into place", destination) }
        }
        let descriptor = open(folder.path, O_RDONLY)
        if descriptor >= 0 { _ = fsync(descriptor); close(descriptor) }
    }

    /// The size and SHA-256 of the blob in `url`, read in chunks (and, for
    /// a sealed file, opened and checked chunk by chunk).
    func digest(of url: URL) throws -> (size: Int64, sha256: String) {
        let reader = try reader(url)
        defer { reader.close() }
        var hash = SHA256Digest()
        var size: Int64 = 0
        while let chunk = try reader.next() {
            hash.update(chunk)
            size += Int64(chunk.count)
        }
        return (size, hash.finalize())
    }

    static func size(of url: URL) -> Int64? {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    static func isFolder(_ url: URL) -> Bool {
        var info = stat()
        return stat(url.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// The error for a failed file call: `storageFull` when the disk is full
    /// (`errno`, or `error` when Foundation made the call), else
    /// `attachmentFileFailed` naming the call and the file.
    static func failure(_ operation: String, _ url: URL, _ error: (any Error)? = nil) -> FerryError {
        let code = errno
        let full = error.map(NoSpace.means) ?? (code == ENOSPC || code == EDQUOT)
        if full {
            return FerryError(.storageFull, "the device has no space left to \(operation) \(url.path): free some space and try again")
        }
        let reason = error.map { "\($0)" } ?? String(cString: strerror(code))
        return FerryError(.attachmentFileFailed, "could not \(operation) \(url.path): \(reason)")
    }
}
