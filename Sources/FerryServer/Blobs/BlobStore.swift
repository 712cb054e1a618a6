import Foundation
import NIOCore

/// Where attachment bytes live on the server, apart from the rows.
///
/// A blob is named by its scope and the SHA-256 of its bytes. It is uploaded
/// in one or more appends (a resumed upload continues where the store's copy
/// ends) and becomes readable only once all its bytes are in and hash to
/// its name; until then no reader sees any of it. Two implementations:
/// ``FileBlobStore`` (files in the data directory, the embedded default)
/// and `PostgresBlobStore` (chunks in a table shared by every instance, in
/// the `FerryPostgres` product).
///
/// ```swift
/// let blobs = try FileBlobStore(directory: dataDirectory.appending(path: "blobs"))
/// let key = try BlobKey(scope: "user:alice", sha256: digest)
/// var state = try await blobs.append(to: key, length: size, offset: 0, bytes: request.body)
/// // state == .complete(size: size) once every byte is in and the hash matched
/// let body = try await blobs.read(key, range: 0..<size)   // streamed, chunk by chunk
/// ```
public protocol BlobStore: Sendable {
    /// How much of `key` the store holds.
    func state(of key: BlobKey) async throws -> BlobState

    /// Appends `bytes` to the upload of `key`, which is `length` bytes long
    /// in all, starting at `offset`. When the last byte is in, the whole is
    /// hashed: if it is `key.sha256` the blob becomes readable, if not
    /// nothing of it is kept.
    ///
    /// - Returns: the state after the append; `.partial` if `bytes` ended
    ///   before `length` (the next append continues from there).
    /// - Throws: ``FerryServerError`` `uploadOffsetMismatch` if `offset` is
    ///   not where the store's copy ends; `badRequest` for bytes past
    ///   `length` (nothing of the upload is kept) or a `length` that
    ///   contradicts the copy held;
    ///   `hashMismatch` when the bytes do not hash to the name.
    func append(
        to key: BlobKey, length: Int64, offset: Int64,
        bytes: some AsyncSequence<ByteBuffer, any Error>
    ) async throws -> BlobState

    /// Bytes of partial uploads read back to resume their hash since the
    /// store was made (the hash is saved with the bytes, so this stays 0
    /// unless a saved hash was missing or behind). `/metrics` reports it as
    /// `ferry_blob_upload_rehashed_bytes`.
    var bytesRehashed: Int64 { get }

    /// The bytes of a complete blob in `range`, read chunk by chunk as the
    /// caller consumes them (never the whole blob in memory).
    ///
    /// - Throws: ``FerryServerError`` `notFound` if the blob is not complete.
    func read(_ key: BlobKey, range: Range<Int64>) async throws -> BlobBytes

    /// Removes the blob, complete or partial. Removing an absent blob does nothing.
    func remove(_ key: BlobKey) async throws

    /// Removes the blob, complete or partial, only if it was last written or
    /// ``touch(_:)``ed before `cutoff` and no append to it is under way, all
    /// decided atomically with touches and appends: the garbage collector's
    /// removal, which a `HEAD` or upload landing after its listing must win.
    ///
    /// ```swift
    /// let removed = try await blobs.remove(key, ifUntouchedSince: cutoff)   // false: it was used since
    /// ```
    ///
    /// - Parameters:
    ///   - key: the blob.
    ///   - cutoff: the blob goes only if its last write or touch is older.
    /// - Returns: whether the blob was removed.
    func remove(_ key: BlobKey, ifUntouchedSince cutoff: Date) async throws -> Bool

    /// Every blob held, complete or partial, with when it was last written
    /// or ``touch(_:)``ed.
    func list() async throws -> [StoredBlob]

    /// Marks a complete blob as just used, so the garbage collector counts
    /// its age from now: a writer that finds the blob whole (`HEAD`) sends
    /// no bytes and pushes a row naming it next, and the blob must outlive
    /// that push even if no row named it before. Does nothing to an absent
    /// or partial blob.
    ///
    /// - Returns: the blob's state after the touch, decided atomically with
    ///   ``remove(_:ifUntouchedSince:)``: `.complete` means the blob is held
    ///   and its age now counts from now; `.absent` if a collector took it first.
    @discardableResult
    func touch(_ key: BlobKey) async throws -> BlobState
}

extension BlobStore {
    /// A store that does not count them reports none.
    public var bytesRehashed: Int64 { 0 }
}

/// A blob's name: its scope and the SHA-256 of its bytes (lowercase hex).
public struct BlobKey: Hashable, Sendable, CustomStringConvertible {
    public let scope: String
    public let sha256: String

    /// - Throws: ``FerryServerError`` `badRequest` unless `sha256` is 64 hex digits.
    public init(scope: String, sha256: String) throws(FerryServerError) {
        guard Self.isDigest(sha256) else {
            throw .badRequest("a blob is named by the SHA-256 of its bytes: 64 hex digits, not \(MutationCheck.quoted(sha256))")
        }
        self.scope = scope
        self.sha256 = sha256.lowercased()
    }

    package static func isDigest(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0 | 0x20) }
    }

    public var description: String { "\(scope)/\(sha256)" }
}

/// How much of a blob a store holds.
public enum BlobState: Hashable, Sendable {
    case absent
    /// An upload under way: `received` of `length` bytes are in.
    case partial(received: Int64, length: Int64)
    /// Every byte is in and hashed to the blob's name.
    case complete(size: Int64)

    /// Where the next append starts.
    public var offset: Int64 {
        switch self {
        case .absent: 0
        case .partial(let received, _): received
        case .complete(let size): size
        }
    }
}

/// A blob a store holds, for garbage collection and the console's usage.
public struct StoredBlob: Hashable, Sendable {
    public var key: BlobKey
    public var complete: Bool
    public var modified: Date
    /// The bytes held: the whole blob when complete, those received so far when not.
    public var bytes: Int64

    package init(key: BlobKey, complete: Bool, modified: Date, bytes: Int64) {
        self.key = key
        self.complete = complete
        self.modified = modified
        self.bytes = bytes
    }
}

/// The bytes of a blob, pulled chunk by chunk: each `next()` reads one
/// chunk from the store, so a slow reader holds at most one chunk.
public struct BlobBytes: AsyncSequence, Sendable {
    public typealias Element = ByteBuffer
    public typealias Failure = any Error

    /// How many bytes the sequence yields.
    public let count: Int64
    package let nextChunk: @Sendable () async throws -> ByteBuffer?

    package init(count: Int64, nextChunk: @escaping @Sendable () async throws -> ByteBuffer?) {
        self.count = count
        self.nextChunk = nextChunk
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        package let nextChunk: @Sendable () async throws -> ByteBuffer?

        public mutating func next() async throws -> ByteBuffer? {
            try await nextChunk()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(nextChunk: nextChunk)
    }
}
