import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where attachment files live under one root, and the file operations
/// that keep them safe: a new file is written in `staging/`, synced, hashed
/// while written and renamed into `attachments/<table>/<row>/<id>`; a
/// download grows in `temp/` and is renamed in only once verified.
///
/// ```swift
/// let files = AttachmentFiles(root: directory)
/// let staged = try await files.stage(chunks, as: id)   // (url, size, sha256)
/// try files.place(staged.url, at: files.file(table: "note", row: "n1", id: id))
/// ```
struct AttachmentFiles: Sendable {
    let root: URL

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
        let fd = open(url.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw Self.failure("create", url) }
        var hash = SHA256Digest()
        var size: Int64 = 0
        do {
            defer { close(fd) }
            for try await chunk in chunks {
                try Self.write(chunk, to: fd, url)
                hash.update(chunk)
                size += Int64(chunk.count)
            }
            guard fsync(fd) == 0 else { throw Self.failure("sync", url) }
        } catch {
            try? FileManager.default.removeItem(at: url)
            throw error
        }
        return Staged(url: url, size: size, sha256: hash.finalize())
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

    /// The SHA-256 and size of a file, read in chunks.
    static func digest(of url: URL) throws -> (size: Int64, sha256: String) {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var hash = SHA256Digest()
        var size: Int64 = 0
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
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

    static func write(_ data: Data, to fd: Int32, _ url: URL) throws {
        try data.withUnsafeBytes { bytes in
            var written = 0
            while written < bytes.count {
                let result = systemWrite(fd, bytes.baseAddress! + written, bytes.count - written)
                guard result > 0 else { throw failure("write", url) }
                written += result
            }
        }
    }

    static func failure(_ operation: String, _ url: URL) -> FerryError {
        FerryError(.attachmentFileFailed, "could not \(operation) \(url.path): \(String(cString: strerror(errno)))")
    }
}

private func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, bytes, count)
}
