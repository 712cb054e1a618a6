import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Blobs as files in a directory: the embedded server's default, inside
/// its data directory.
///
/// An upload grows a file under `uploads/`; the complete, verified blob is
/// synced and renamed into `complete/`, so a reader never sees a partial
/// file, and a server killed mid-upload leaves the upload to resume.
/// Files are read and written on NIO's thread pool, never on a cooperative
/// thread.
///
/// ```
/// <directory>/<sha256 of the scope>/scope            the scope's name
/// <directory>/<sha256 of the scope>/uploads/<sha256>  bytes so far (+ .length)
/// <directory>/<sha256 of the scope>/complete/<sha256>
/// ```
///
/// ```swift
/// let blobs = try FileBlobStore(directory: dataDirectory.appending(path: "blobs"))
/// ```
public final class FileBlobStore: BlobStore {
    public let directory: URL
    /// The largest blob accepted.
    public let maxBlobBytes: Int64
    /// Blobs claimed by an append or a collector's removal: a second claim
    /// of the same blob is refused, not interleaved.
    private let claimed = NIOLockedValueBox(Set<BlobKey>())
    /// Held (on the thread pool) around a touch and around a removal's
    /// check of the blob's age, so the two are decided one after the other.
    private let ages = NIOLock()
    private let rehashed = BlobRehashCount()

    public var bytesRehashed: Int64 { rehashed.value }
    private let pool = NIOThreadPool.singleton

    public init(directory: URL, maxBlobBytes: Int64 = 1 << 30) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        self.maxBlobBytes = maxBlobBytes
    }

    public func state(of key: BlobKey) async throws -> BlobState {
        let paths = Paths(directory, key)
        return try await pool.runIfActive { try paths.state() }
    }

    public func append(
        to key: BlobKey, length: Int64, offset: Int64,
        bytes: some AsyncSequence<ByteBuffer, any Error>
    ) async throws -> BlobState {
        guard claimed.withLockedValue({ $0.insert(key).inserted }) else {
            throw FerryServerError(.alreadyExists, "another upload of this blob is under way; ask HEAD for its offset and retry")
        }
        defer { _ = claimed.withLockedValue { $0.remove(key) } }
        let paths = Paths(directory, key)
        let state = try await pool.runIfActive { try paths.state() }
        if case .absent = state, length <= maxBlobBytes, offset == 0 {
            try await pool.runIfActive { try paths.startUpload(scope: key.scope, length: length) }
        }
        return try await BlobUpload.append(
            to: key, state: state, length: length, offset: offset, limit: maxBlobBytes,
            bytes: bytes, target: Target(paths: paths, pool: pool, ages: ages), rehashed: rehashed)
    }

    public func read(_ key: BlobKey, range: Range<Int64>) async throws -> BlobBytes {
        let paths = Paths(directory, key)
        guard case .complete(let size) = try await pool.runIfActive({ try paths.state() }) else {
            throw FerryServerError(.notFound, "no blob \(key.sha256) in scope `\(key.scope)`")
        }
        guard range.lowerBound >= 0, range.upperBound <= size else {
            throw FerryServerError(.rangeNotSatisfiable, "the blob is \(size) bytes; \(range) is outside it")
        }
        return try await FileReader.make(paths.complete, range: range, pool: pool)
    }

    public func remove(_ key: BlobKey) async throws {
        let paths = Paths(directory, key)
        try await pool.runIfActive {
            for url in [paths.complete] + paths.uploadFiles {
                try? FileManager.default.removeItem(at: url)
            }
        }
    }

    public func remove(_ key: BlobKey, ifUntouchedSince cutoff: Date) async throws -> Bool {
        // An append under way holds the claim: the blob is in use.
        guard claimed.withLockedValue({ $0.insert(key).inserted }) else { return false }
        defer { _ = claimed.withLockedValue { $0.remove(key) } }
        let (paths, ages) = (Paths(directory, key), ages)
        return try await pool.runIfActive {
            try ages.withLock {
                guard let modified = paths.modified(), modified < cutoff else { return false }
                for url in [paths.complete] + paths.uploadFiles {
                    try? FileManager.default.removeItem(at: url)
                }
                return true
            }
        }
    }

    @discardableResult
    public func touch(_ key: BlobKey) async throws -> BlobState {
        let (paths, ages) = (Paths(directory, key), ages)
        return try await pool.runIfActive { try paths.touch(under: ages) }
    }

    public func list() async throws -> [StoredBlob] {
        let directory = directory
        return try await pool.runIfActive {
            let manager = FileManager.default
            var blobs: [StoredBlob] = []
            for scopeDirectory in (try? manager.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)) ?? [] {
                guard let scope = try? String(contentsOf: scopeDirectory.appending(path: "scope"), encoding: .utf8) else { continue }
                for (folder, complete) in [("complete", true), ("uploads", false)] {
                    let files =
                        (try? manager.contentsOfDirectory(
                            at: scopeDirectory.appending(path: folder),
                            includingPropertiesForKeys: [.contentModificationDateKey, .fileSizeKey])) ?? []
                    for file in files where BlobKey.isDigest(file.lastPathComponent) {
                        let values = try? file.resourceValues(forKeys: [.contentModificationDateKey, .fileSizeKey])
                        blobs.append(
                            StoredBlob(
                                key: try BlobKey(scope: scope, sha256: file.lastPathComponent),
                                complete: complete, modified: values?.contentModificationDate ?? .distantPast,
                                bytes: Int64(values?.fileSize ?? 0)))
                    }
                }
            }
            return blobs
        }
    }

    // MARK: - Files

    /// Where one blob's files are.
    struct Paths: Sendable {
        let scopeDirectory: URL
        let complete: URL
        let upload: URL
        let uploadLength: URL
        /// The checkpoint of the hash of the upload's bytes, as of its last write.
        let uploadHash: URL

        init(_ directory: URL, _ key: BlobKey) {
            scopeDirectory = directory.appending(path: hexDigest(SHA256.hash(data: Data(key.scope.utf8))))
            complete = scopeDirectory.appending(path: "complete").appending(path: key.sha256)
            upload = scopeDirectory.appending(path: "uploads").appending(path: key.sha256)
            uploadLength = scopeDirectory.appending(path: "uploads").appending(path: key.sha256 + ".length")
            uploadHash = scopeDirectory.appending(path: "uploads").appending(path: key.sha256 + ".hash")
        }

        /// Every file of an upload under way.
        var uploadFiles: [URL] { [upload, uploadLength, uploadHash] }

        func state() throws -> BlobState {
            if let size = Self.size(of: complete) { return .complete(size: size) }
            guard let text = try? String(contentsOf: uploadLength, encoding: .utf8), let length = Int64(text) else {
                return .absent
            }
            return .partial(received: Self.size(of: upload) ?? 0, length: length)
        }

        func startUpload(scope: String, length: Int64) throws {
            let manager = FileManager.default
            do {
                try manager.createDirectory(at: upload.deletingLastPathComponent(), withIntermediateDirectories: true)
                try manager.createDirectory(at: complete.deletingLastPathComponent(), withIntermediateDirectories: true)
                let scopeFile = scopeDirectory.appending(path: "scope")
                if !manager.fileExists(atPath: scopeFile.path) {
                    try Data(scope.utf8).write(to: scopeFile, options: .atomic)
                }
            } catch {
                throw FileBlobStore.failure("prepare", scopeDirectory.path, error)
            }
            // A hash left by an earlier upload of these bytes describes none of the new one's.
            do {
                try manager.removeItem(at: uploadHash)
            } catch  where (error as NSError).code == NSFileNoSuchFileError || (error as NSError).code == Int(ENOENT) {
                // None: the usual case.
            } catch {
                throw FileBlobStore.failure("remove the old hash of", upload.path, error)
            }
            let fd = open(upload.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            guard fd >= 0 else { throw FileBlobStore.failure("create", upload.path) }
            close(fd)
            // The length last: an upload without it is no upload (see `state()`).
            do {
                try Data(String(length).utf8).write(to: uploadLength, options: .atomic)
            } catch {
                throw FileBlobStore.failure("record the length of", upload.path, error)
            }
        }

        /// When the blob was last written or touched: its complete file's
        /// time, or its upload's.
        func modified() -> Date? {
            for url in [complete, upload] {
                if let date = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.modificationDate] as? Date {
                    return date
                }
            }
            return nil
        }

        /// Moves a complete blob's time to now, under `ages`; the state after.
        func touch(under ages: NIOLock) throws -> BlobState {
            try ages.withLock {
                let state = try state()
                if case .complete = state {
                    do {
                        try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: complete.path)
                    } catch {
                        // Untouched, the blob stays collectable: the caller must not count on it.
                        throw FileBlobStore.failure("touch", complete.path, error)
                    }
                }
                return state
            }
        }

        static func size(of url: URL) -> Int64? {
            var info = stat()
            guard stat(url.path, &info) == 0 else { return nil }
            return Int64(info.st_size)
        }
    }

    struct Target: BlobUploadTarget {
        let paths: Paths
        let pool: NIOThreadPool
        let ages: NIOLock

        func touch() async throws -> BlobState {
            let (paths, ages) = (paths, ages)
            return try await pool.runIfActive { try paths.touch(under: ages) }
        }

        func savedHash() async throws -> [UInt8]? {
            let url = paths.uploadHash
            return try await pool.runIfActive { (try? Data(contentsOf: url)).map { [UInt8]($0) } }
        }

        func heldBytes(_ range: Range<Int64>) async throws -> BlobBytes {
            try await FileReader.make(paths.upload, range: range, pool: pool)
        }

        /// The bytes alone: the hash is saved apart (`saveHash`), after them.
        func write(_ chunk: ByteBuffer, at position: Int64, hash: [UInt8], replacing: [UInt8]?) async throws {
            let path = paths.upload.path
            try await pool.runIfActive {
                let fd = open(path, O_WRONLY)
                guard fd >= 0 else { throw FileBlobStore.failure("open", path) }
                defer { close(fd) }
                try chunk.withUnsafeReadableBytes { bytes in
                    var written = 0
                    while written < bytes.count {
                        let result = pwrite(fd, bytes.baseAddress! + written, bytes.count - written, off_t(position) + off_t(written))
                        guard result > 0 else { throw FileBlobStore.failure("write", path) }
                        written += result
                    }
                }
            }
        }

        /// The bytes made durable first, then the hash beside them (replaced
        /// whole by a rename): a saved hash never covers bytes the disk may
        /// not hold, and one that lags behind (a crash between saves) is
        /// caught up from the file.
        func saveHash(_ hash: [UInt8]) async throws {
            let (path, hashURL) = (paths.upload.path, paths.uploadHash)
            try await pool.runIfActive {
                let fd = open(path, O_WRONLY)
                guard fd >= 0 else { throw FileBlobStore.failure("open", path) }
                defer { close(fd) }
                guard fdatasync(fd) == 0 else { throw FileBlobStore.failure("sync", path) }
                do {
                    try Data(hash).write(to: hashURL, options: .atomic)
                } catch {
                    throw FileBlobStore.failure("save the hash of", path, error)
                }
            }
        }

        func complete(size: Int64) async throws {
            let paths = paths
            try await pool.runIfActive {
                let fd = open(paths.upload.path, O_RDONLY)
                guard fd >= 0, fsync(fd) == 0 else { throw FileBlobStore.failure("sync", paths.upload.path) }
                close(fd)
                guard rename(paths.upload.path, paths.complete.path) == 0 else {
                    throw FileBlobStore.failure("rename", paths.complete.path)
                }
                let folder = open(paths.complete.deletingLastPathComponent().path, O_RDONLY)
                if folder >= 0 { _ = fsync(folder); close(folder) }
                try? FileManager.default.removeItem(at: paths.uploadLength)
                try? FileManager.default.removeItem(at: paths.uploadHash)
            }
        }

        func discard() async throws {
            let paths = paths
            try await pool.runIfActive {
                for url in paths.uploadFiles { try? FileManager.default.removeItem(at: url) }
            }
        }
    }

    /// The error for a failed system call (`errno`), or for a Foundation
    /// call that threw `error`: a full disk is `unavailable` (503: the upload
    /// resumes from its offset once space is freed), any other failure an
    /// internal error.
    static func failure(_ operation: String, _ path: String, _ error: (any Error)? = nil) -> FerryServerError {
        let code = errno
        if error.map({ meansNoSpace($0 as NSError) }) ?? (code == ENOSPC || code == EDQUOT) {
            return FerryServerError(.unavailable, "the blob store has no space left on its disk; retry once space is freed")
        }
        let reason = error.map { "\($0)" } ?? String(cString: strerror(code))
        return FerryServerError(.internalError, "could not \(operation) \(path): \(reason)")
    }

    private static func meansNoSpace(_ error: NSError) -> Bool {
        if error.domain == NSPOSIXErrorDomain { return error.code == Int(ENOSPC) || error.code == Int(EDQUOT) }
        if error.domain == NSCocoaErrorDomain, error.code == CocoaError.fileWriteOutOfSpace.rawValue { return true }
        return (error.userInfo[NSUnderlyingErrorKey] as? NSError).map(meansNoSpace) ?? false
    }
}

/// Reads a file's range in chunks of 64 KiB as they are asked for.
final class FileReader: Sendable {
    static let chunkSize: Int64 = 64 << 10
    private let fd: Int32
    private let end: Int64
    private let position: NIOLockedValueBox<Int64>
    private let pool: NIOThreadPool

    private init(fd: Int32, range: Range<Int64>, pool: NIOThreadPool) {
        self.fd = fd
        self.end = range.upperBound
        self.position = NIOLockedValueBox(range.lowerBound)
        self.pool = pool
    }

    deinit { close(fd) }

    static func make(_ url: URL, range: Range<Int64>, pool: NIOThreadPool) async throws -> BlobBytes {
        let path = url.path
        let fd = try await pool.runIfActive {
            let fd = open(path, O_RDONLY)
            guard fd >= 0 else { throw FileBlobStore.failure("open", path) }
            return fd
        }
        let reader = FileReader(fd: fd, range: range, pool: pool)
        return BlobBytes(count: Int64(range.count)) { try await reader.next() }
    }

    private func next() async throws -> ByteBuffer? {
        let start = position.withLockedValue { $0 }
        guard start < end else { return nil }
        let count = Int(min(Self.chunkSize, end - start))
        let fd = fd
        // Allocated here, filled on the pool: a buffer allocated on a pool
        // thread and freed on an event loop made the server's peak memory
        // swing between runs (glibc keeps one heap per thread).
        let box = BufferBox(ByteBufferAllocator().buffer(capacity: count))
        let buffer = try await pool.runIfActive {
            var buffer = box.take()
            let read = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { bytes in
                let result = pread(fd, bytes.baseAddress!, count, off_t(start))
                guard result >= 0 else { throw FerryServerError(.internalError, "could not read a blob: \(String(cString: strerror(errno)))") }
                return result
            }
            guard read > 0 else { throw FerryServerError(.internalError, "a blob file ended early") }
            return buffer
        }
        position.withLockedValue { $0 = start + Int64(buffer.readableBytes) }
        return buffer
    }
}

/// Hands a buffer to the thread that fills it without a second reference
/// (which would make writing to it copy it there).
private final class BufferBox: @unchecked Sendable {
    // @unchecked: taken once, by the one closure it is given to.
    private var buffer: ByteBuffer?

    init(_ buffer: ByteBuffer) { self.buffer = buffer }

    func take() -> ByteBuffer {
        defer { buffer = nil }
        return buffer ?? ByteBuffer()
    }
}
