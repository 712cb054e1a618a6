import ArgumentParser
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One `ferry-server serve` per data directory: the server holds an
/// exclusive lock on `ferry-server.lock` there for its whole life (the
/// kernel drops it when the process ends, however it ends), and a second
/// server on the same directory refuses to start, naming the first.
///
/// ```swift
/// let lock = try DataDirectoryLock.acquire(options.dataDirectory)   // held until the process exits
/// ```
struct DataDirectoryLock: ~Copyable {
    static let fileName = "ferry-server.lock"
    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// - Throws: `ValidationError` naming the other server's pid when one holds the directory.
    static func acquire(_ directory: URL) throws -> DataDirectoryLock {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appending(path: fileName).path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw ValidationError("could not open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            close(descriptor)
            throw ValidationError(
                """
                another ferry-server\(holder.map { $0.isEmpty ? "" : " (pid \($0))" } ?? "") is serving --data-dir \(directory.path); \
                stop it first, or give this one another --data-dir
                """)
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(descriptor, 0)
        _ = pid.withCString { pwrite(descriptor, $0, strlen($0), 0) }
        return DataDirectoryLock(descriptor: descriptor)
    }

    deinit {
        close(descriptor)
    }
}
