import FerryServer
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO

/// Blobs in PostgreSQL, chunked: every server instance behind a load
/// balancer reads and resumes the same uploads, with no storage beside
/// the database.
///
/// Each chunk (up to 1 MiB) is written in its own transaction together
/// with the blob's byte count, guarded by the count it expects, so two
/// instances appending to one blob never interleave and a killed upload
/// resumes exactly where its last chunk committed. Readers fetch one chunk
/// per query as they consume, and see a blob only once it is complete.
///
/// ```swift
/// let store = PostgresSyncStore(configuration: postgres)
/// let blobs = PostgresBlobStore(store: store)
/// ```
public struct PostgresBlobStore: BlobStore {
    let store: PostgresSyncStore
    /// The largest blob accepted.
    public let maxBlobBytes: Int64
    private let rehashed = BlobRehashCount()

    public init(store: PostgresSyncStore, maxBlobBytes: Int64 = 1 << 30) {
        self.store = store
        self.maxBlobBytes = maxBlobBytes
    }

    public var bytesRehashed: Int64 { rehashed.value }

    public func state(of key: BlobKey) async throws -> BlobState {
        let logger = store.logger
        return try await store.transaction(.snapshot) { connection, _ in
            try await Self.state(of: key, connection, logger)
        }
    }

    public func append(
        to key: BlobKey, length: Int64, offset: Int64,
        bytes: some AsyncSequence<ByteBuffer, any Error>
    ) async throws -> BlobState {
        let logger = store.logger
        let limit = maxBlobBytes
        let state = try await store.transaction(.serializable) { connection, _ in
            let state = try await Self.state(of: key, connection, logger)
            if case .absent = state, length <= limit, length >= 0, offset == 0 {
                try await connection.query(
                    """
                    INSERT INTO ferry_blobs (scope, sha256, length, received) VALUES (\(key.scope), \(key.sha256), \(length), 0)
                    """, logger: logger)
                return BlobState.partial(received: 0, length: length)
            }
            if case .partial = state {
                // A resumed upload is in use from now: the collector leaves it while its held bytes are hashed.
                try await connection.query(
                    """
                    UPDATE ferry_blobs SET modified_at = now() WHERE scope = \(key.scope) AND sha256 = \(key.sha256)
                    """, logger: logger)
            }
            return state
        }
        return try await BlobUpload.append(
            to: key, state: state, length: length, offset: offset, limit: limit,
            bytes: bytes, target: Target(store: store, key: key), rehashed: rehashed)
    }

    public func read(_ key: BlobKey, range: Range<Int64>) async throws -> BlobBytes {
        guard case .complete(let size) = try await state(of: key) else {
            throw FerryServerError(.notFound, "no blob \(key.sha256) in scope `\(key.scope)`")
        }
        guard range.lowerBound >= 0, range.upperBound <= size else {
            throw FerryServerError(.rangeNotSatisfiable, "the blob is \(size) bytes; \(range) is outside it")
        }
        return Self.bytes(of: key, range, store)
    }

    public func remove(_ key: BlobKey) async throws {
        let logger = store.logger
        try await store.transaction(.serializable) { connection, _ in
            try await Self.remove(key, connection, logger)
        }
    }

    public func remove(_ key: BlobKey, ifUntouchedSince cutoff: Date) async throws -> Bool {
        let logger = store.logger
        // Serializable: a touch or an append's write committed first makes the row too new to match, and one
        // racing it fails over to a retry that sees the blob gone.
        return try await store.transaction(.serializable) { connection, _ in
            let removed = try await connection.query(
                """
                DELETE FROM ferry_blobs WHERE scope = \(key.scope) AND sha256 = \(key.sha256) AND modified_at < \(cutoff)
                RETURNING length
                """, logger: logger
            ).decode(Int64.self)
            var any = false
            for try await _ in removed { any = true }
            guard any else { return false }
            try await connection.query("DELETE FROM ferry_blob_chunks WHERE scope = \(key.scope) AND sha256 = \(key.sha256)", logger: logger)
            return true
        }
    }

    @discardableResult
    public func touch(_ key: BlobKey) async throws -> BlobState {
        try await Self.touch(key, store)
    }

    static func touch(_ key: BlobKey, _ store: PostgresSyncStore) async throws -> BlobState {
        let logger = store.logger
        return try await store.transaction(.serializable) { connection, _ in
            try await connection.query(
                """
                UPDATE ferry_blobs SET modified_at = now() WHERE scope = \(key.scope) AND sha256 = \(key.sha256) AND complete
                """, logger: logger)
            return try await Self.state(of: key, connection, logger)
        }
    }

    public func list() async throws -> [StoredBlob] {
        let logger = store.logger
        return try await store.transaction(.snapshot) { connection, _ in
            var blobs: [StoredBlob] = []
            let rows = try await connection.query(
                "SELECT scope, sha256, complete, modified_at, CASE WHEN complete THEN length ELSE received END FROM ferry_blobs",
                logger: logger
            ).decode((String, String, Bool, Date, Int64).self)
            for try await (scope, sha256, complete, modified, bytes) in rows {
                blobs.append(
                    StoredBlob(key: try BlobKey(scope: scope, sha256: sha256), complete: complete, modified: modified, bytes: bytes))
            }
            return blobs
        }
    }

    // MARK: - Statements

    static func state(of key: BlobKey, _ connection: PostgresConnection, _ logger: Logger) async throws -> BlobState {
        let rows = try await connection.query(
            """
            SELECT length, received, complete FROM ferry_blobs WHERE scope = \(key.scope) AND sha256 = \(key.sha256)
            """, logger: logger
        ).decode((Int64, Int64, Bool).self)
        for try await (length, received, complete) in rows {
            return complete ? .complete(size: length) : .partial(received: received, length: length)
        }
        return .absent
    }

    static func remove(_ key: BlobKey, _ connection: PostgresConnection, _ logger: Logger) async throws {
        try await connection.query("DELETE FROM ferry_blob_chunks WHERE scope = \(key.scope) AND sha256 = \(key.sha256)", logger: logger)
        try await connection.query("DELETE FROM ferry_blobs WHERE scope = \(key.scope) AND sha256 = \(key.sha256)", logger: logger)
    }

    /// The bytes of `range`, one chunk query per `next()`.
    static func bytes(of key: BlobKey, _ range: Range<Int64>, _ store: PostgresSyncStore) -> BlobBytes {
        let position = NIOLockedValueBox(range.lowerBound)
        return BlobBytes(count: Int64(range.count)) {
            let start = position.withLockedValue { $0 }
            guard start < range.upperBound else { return nil }
            let chunk = try await chunk(containing: start, of: key, store)
            let wanted = Int(min(Int64(chunk.buffer.readableBytes) - (start - chunk.start), range.upperBound - start))
            guard wanted > 0, let slice = chunk.buffer.getSlice(at: chunk.buffer.readerIndex + Int(start - chunk.start), length: wanted) else {
                throw FerryServerError(.internalError, "blob \(key) has no chunk at byte \(start)")
            }
            position.withLockedValue { $0 = start + Int64(wanted) }
            return slice
        }
    }

    static func chunk(
        containing position: Int64, of key: BlobKey,
        _ store: PostgresSyncStore
    ) async throws -> (start: Int64, buffer: ByteBuffer) {
        let logger = store.logger
        return try await store.transaction(.snapshot) { connection, _ in
            let rows = try await connection.query(
                """
                SELECT start, data FROM ferry_blob_chunks
                WHERE scope = \(key.scope) AND sha256 = \(key.sha256) AND start <= \(position)
                ORDER BY start DESC LIMIT 1
                """, logger: logger
            ).decode((Int64, ByteBuffer).self)
            for try await (start, data) in rows { return (start, data) }
            throw FerryServerError(.internalError, "blob \(key) has no chunk at byte \(position)")
        }
    }

    struct Target: BlobUploadTarget {
        let store: PostgresSyncStore
        let key: BlobKey

        func savedHash() async throws -> [UInt8]? {
            let (key, logger) = (key, store.logger)
            return try await store.transaction(.snapshot) { connection, _ in
                let rows = try await connection.query(
                    "SELECT hash_state FROM ferry_blobs WHERE scope = \(key.scope) AND sha256 = \(key.sha256)", logger: logger
                ).decode(ByteBuffer?.self)
                for try await state in rows { return state.map { Array($0.readableBytesView) } }
                return nil
            }
        }

        func heldBytes(_ range: Range<Int64>) async throws -> BlobBytes {
            PostgresBlobStore.bytes(of: key, range, store)
        }

        /// Saved with each chunk already.
        func saveHash(_ hash: [UInt8]) async throws {}

        /// The chunk, the byte count and the hash in one transaction: the
        /// saved hash always covers exactly the bytes held, and it moves on
        /// only from the one this upload resumed from (an upload of the same
        /// blob begun again elsewhere meanwhile has another).
        func write(_ chunk: ByteBuffer, at position: Int64, hash: [UInt8], replacing: [UInt8]?) async throws {
            let (key, logger) = (key, store.logger)
            let count = Int64(chunk.readableBytes)
            let hashState = ByteBuffer(bytes: hash)
            let previous = replacing.map { ByteBuffer(bytes: $0) }
            try await store.transaction(.serializable) { connection, _ in
                let moved = try await connection.query(
                    """
                    UPDATE ferry_blobs SET received = received + \(count), hash_state = \(hashState), modified_at = now()
                    WHERE scope = \(key.scope) AND sha256 = \(key.sha256) AND received = \(position) AND NOT complete
                    AND hash_state IS NOT DISTINCT FROM \(previous)
                    RETURNING received
                    """, logger: logger
                ).decode(Int64.self)
                var updated = false
                for try await _ in moved { updated = true }
                guard updated else {
                    let held = try await PostgresBlobStore.state(of: key, connection, logger).offset
                    throw BlobUploadRules.offsetMismatch(held)
                }
                try await connection.query(
                    """
                    INSERT INTO ferry_blob_chunks (scope, sha256, start, data) VALUES (\(key.scope), \(key.sha256), \(position), \(chunk))
                    """, logger: logger)
            }
        }

        func complete(size: Int64) async throws {
            let (key, logger) = (key, store.logger)
            try await store.transaction(.serializable) { connection, _ in
                let completed = try await connection.query(
                    """
                    UPDATE ferry_blobs SET complete = true, modified_at = now()
                    WHERE scope = \(key.scope) AND sha256 = \(key.sha256) AND received = length
                    RETURNING length
                    """, logger: logger
                ).decode(Int64.self)
                var any = false
                for try await _ in completed { any = true }
                // A collector removed the upload while its last bytes came in: the uploader starts again.
                guard any else { throw BlobUploadRules.offsetMismatch(0) }
            }
        }

        func touch() async throws -> BlobState {
            try await PostgresBlobStore.touch(key, store)
        }

        func discard() async throws {
            let (key, logger) = (key, store.logger)
            try await store.transaction(.serializable) { connection, _ in
                try await PostgresBlobStore.remove(key, connection, logger)
            }
        }
    }
}
