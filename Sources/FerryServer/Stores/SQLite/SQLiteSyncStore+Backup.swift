import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Backups of the embedded store while it serves, and restores.
///
/// A backup is SQLite's online backup of the store file, taken in one read
/// transaction: consistent, and (the store runs in WAL mode) never blocking
/// the server's writes. A restore puts a backup in place of the store of a
/// data directory no server is running on. The restored store knows where
/// its history ends: the devices that synced past the backup find their
/// cursors point into lost history, keep every row and send back what the
/// store lost (DESIGN.md server semantic 6).
///
/// ```swift
/// let report = try SQLiteSyncStore.backup(directory: dataDirectory, to: URL(filePath: "ferry-2026-11-25.sqlite"))
/// // later, with the server stopped:
/// try SQLiteSyncStore.restore(directory: dataDirectory, from: URL(filePath: "ferry-2026-11-25.sqlite"))
/// ```
extension SQLiteSyncStore {
    /// What a backup holds.
    public struct BackupReport: Sendable, Equatable {
        /// The store's version counter in the backup.
        public var version: Int64
        /// The backup file's size in bytes.
        public var bytes: Int64
    }

    /// Copies the store of `directory` to `destination`, a new file, while a
    /// server may be serving it.
    ///
    /// - Throws: ``FerryServerError`` `notFound` when `directory` holds no
    ///   store, `alreadyExists` when `destination` exists (a backup never
    ///   overwrites).
    public static func backup(directory: URL, to destination: URL) throws -> BackupReport {
        let source = directory.appending(path: fileName).path
        guard FileManager.default.fileExists(atPath: source) else {
            throw FerryServerError(.notFound, "\(directory.path) holds no Ferry store (no \(fileName))")
        }
        guard !FileManager.default.fileExists(atPath: destination.path) else {
            throw FerryServerError(.alreadyExists, "\(destination.path) exists; a backup goes to a new file")
        }
        do {
            let store = try DatabaseQueue(path: source)
            let copy = try DatabaseQueue(path: destination.path)
            // One step: one read transaction, a consistent copy; WAL readers never block the server's writers.
            try store.backup(to: copy)
            try copy.close()
            try store.close()
            return try check(destination)
        } catch let error as FerryServerError {
            try? FileManager.default.removeItem(at: destination)
            throw error
        } catch {
            try? FileManager.default.removeItem(at: destination)
            throw FerryServerError(.internalError, "the backup of \(source) failed: \(error)")
        }
    }

    /// Puts the backup `source` in place of the store of `directory`. No
    /// server may be running on it (the caller holds the directory).
    ///
    /// - Throws: ``FerryServerError`` `badRequest` when `source` is not a
    ///   Ferry store backup; nothing in `directory` changes then.
    @discardableResult
    public static func restore(directory: URL, from source: URL) throws -> BackupReport {
        let report = try check(source)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = directory.appending(path: fileName).path
        let staged = store + ".restoring"
        try? FileManager.default.removeItem(atPath: staged)
        try FileManager.default.copyItem(atPath: source.path, toPath: staged)
        let handle = try FileHandle(forUpdating: URL(filePath: staged))
        try handle.synchronize()
        try handle.close()
        // The old store's log first: left beside the restored file, SQLite would replay it into it.
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store + suffix) }
        guard rename(staged, store) == 0 else {
            throw FerryServerError(.internalError, "could not move the backup into place at \(store): \(String(cString: strerror(errno)))")
        }
        return report
    }

    /// Opens `file` read-only and checks it is a Ferry store.
    private static func check(_ file: URL) throws -> BackupReport {
        do {
            var configuration = Configuration()
            configuration.readonly = true
            let database = try DatabaseQueue(path: file.path, configuration: configuration)
            defer { try? database.close() }
            let version = try database.read { db -> Int64? in
                guard try db.tableExists("store_meta"), try db.tableExists("rows") else { return nil }
                guard try String.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'epoch'") != nil else { return nil }
                return try Int64.fetchOne(db, sql: "SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = 'version'")
            }
            guard let version else { throw FerryServerError.badRequest("\(file.path) is not a Ferry store backup") }
            let size = (try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value ?? 0
            return BackupReport(version: version, bytes: size)
        } catch let error as FerryServerError {
            throw error
        } catch {
            throw FerryServerError.badRequest("\(file.path) is not a Ferry store backup: \(error)")
        }
    }
}
