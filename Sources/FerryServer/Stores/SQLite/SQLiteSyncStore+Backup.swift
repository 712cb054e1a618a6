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
/// store lost (ARCHITECTURE.md server semantic 6).
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
        // Written beside, checked, then renamed: a backup cut short never sits under the name asked for.
        let partial = URL(filePath: destination.path + ".partial")
        try? FileManager.default.removeItem(at: partial)
        do {
            var configuration = Configuration()
            configuration.busyMode = .timeout(5)
            let store = try DatabaseQueue(path: source, configuration: configuration)
            let copy = try DatabaseQueue(path: partial.path)
            // One step: one read transaction, a consistent copy; WAL readers never block the server's writers.
            try store.backup(to: copy)
            try store.close()
            // One self-contained file (the copy inherits WAL mode): nothing beside it to lose.
            try copy.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = DELETE") }
            try copy.close()
            try sync(partial)
            let report = try check(partial)
            try FileManager.default.moveItem(at: partial, to: destination)
            try sync(destination.deletingLastPathComponent())
            return report
        } catch let error as FerryServerError {
            try? FileManager.default.removeItem(at: partial)
            throw error
        } catch {
            try? FileManager.default.removeItem(at: partial)
            throw FerryServerError(.internalError, "the backup of \(source) failed: \(error)")
        }
    }

    /// Puts the backup `source` in place of the store of `directory`. No
    /// server may be running on it (the caller holds the directory).
    ///
    /// - Throws: ``FerryServerError`` `badRequest` when `source` is not a
    ///   Ferry store backup; nothing in `directory` changes then.
    ///
    /// The copy is checked (`quick_check`, a Ferry store) before anything is
    /// replaced. The old store is moved aside whole, with its log, to
    /// `ferry-server.sqlite.replaced*`, so a restore cut short leaves either
    /// the old store or the new one, never a store without its log.
    @discardableResult
    public static func restore(directory: URL, from source: URL) throws -> BackupReport {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = directory.appending(path: fileName).path
        let staged = store + ".restoring"
        try? FileManager.default.removeItem(atPath: staged)
        do {
            try FileManager.default.copyItem(atPath: source.path, toPath: staged)
        } catch {
            throw FerryServerError.badRequest("could not read the backup \(source.path): \(error.localizedDescription)")
        }
        let report: BackupReport
        do {
            try sync(URL(filePath: staged))
            report = try check(URL(filePath: staged))
        } catch {
            try? FileManager.default.removeItem(atPath: staged)
            throw error
        }
        // The old store aside with its log, so it is never opened without it.
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: store + suffix) {
            let aside = store + ".replaced" + suffix
            try? FileManager.default.removeItem(atPath: aside)
            try FileManager.default.moveItem(atPath: store + suffix, toPath: aside)
        }
        try FileManager.default.moveItem(atPath: staged, toPath: store)
        try sync(directory)
        return report
    }

    /// Flushes a file, or a directory's entries, to the disk.
    private static func sync(_ url: URL) throws {
        let descriptor = open(url.path, O_RDONLY)
        guard descriptor >= 0 else { throw FerryServerError(.internalError, "could not open \(url.path) to sync it") }
        defer { _ = Self.closeDescriptor(descriptor) }
        guard fsync(descriptor) == 0 else { throw FerryServerError(.internalError, "could not sync \(url.path)") }
    }

    private static func closeDescriptor(_ descriptor: Int32) -> Int32 {
        #if canImport(Glibc)
            Glibc.close(descriptor)
        #else
            Darwin.close(descriptor)
        #endif
    }

    /// Opens `file` read-only and checks it is a Ferry store.
    private static func check(_ file: URL) throws -> BackupReport {
        do {
            var configuration = Configuration()
            configuration.readonly = true
            let database = try DatabaseQueue(path: file.path, configuration: configuration)
            defer { try? database.close() }
            let version = try database.read { db -> Int64? in
                guard try String.fetchOne(db, sql: "PRAGMA quick_check") == "ok" else {
                    throw FerryServerError.badRequest("\(file.path) is damaged (quick_check failed)")
                }
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
