import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One sync at a time per database file, across engines and processes: an
/// advisory lock (`flock`) on `<file>.sync-lock` beside the database, held
/// for one sync and released by the kernel when its process ends, killed or
/// not. A database without a file (in memory) has no other syncer to meet.
///
/// ```swift
/// if let lock = try SyncFileLock.tryAcquire(for: "/data/app.sqlite") {
///     defer { lock.release() }
///     // ... sync ...
/// }   // nil: another sync of the file is running
/// ```
struct SyncFileLock: Sendable {
    private let descriptor: Int32

    /// The lock file of a database at `databasePath`; `nil` for one in memory.
    static func path(for databasePath: String) -> String? {
        guard !databasePath.isEmpty, databasePath != ":memory:", !databasePath.hasPrefix("file::memory:") else { return nil }
        return databasePath + ".sync-lock"
    }

    /// The lock, or `nil` when another sync of the file holds it.
    static func tryAcquire(for databasePath: String) throws -> SyncFileLock? {
        guard let path = path(for: databasePath) else { return SyncFileLock(descriptor: -1) }
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw FerryError(.syncAlreadyRunning, "cannot open the sync lock \(path): \(String(cString: strerror(errno)))")
        }
        if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return SyncFileLock(descriptor: descriptor) }
        let failure = errno
        close(descriptor)
        if failure == EWOULDBLOCK || failure == EINTR { return nil }
        throw FerryError(.syncAlreadyRunning, "cannot take the sync lock \(path): \(String(cString: strerror(failure)))")
    }

    /// Releases the lock (closing the file releases it).
    func release() {
        if descriptor >= 0 { close(descriptor) }
    }
}
