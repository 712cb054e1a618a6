import FerryProtocol
import NIOConcurrencyHelpers
import NIOCore

/// The rules an append to a blob keeps, as a pure decision: where it may
/// start, how long the blob may be, and what a copy already held means.
///
/// ```swift
/// switch try BlobUploadRules.check(state: .partial(received: 10, length: 30), offset: 10, length: 30, limit: 1 << 30) {
/// case .append: ...            // continue at byte 10
/// case .alreadyComplete: ...   // nothing to do
/// }
/// ```
package enum BlobUploadRules {
    package enum Decision: Equatable {
        /// Append from the offset.
        case append
        /// The blob is already whole: the bytes are not needed.
        case alreadyComplete(size: Int64)
    }

    package static func check(state: BlobState, offset: Int64, length: Int64, limit: Int64) throws(FerryServerError) -> Decision {
        guard length >= 0, offset >= 0 else {
            throw .badRequest("Upload-Length and Upload-Offset are byte counts, at least 0")
        }
        guard length <= limit else {
            throw FerryServerError(.payloadTooLarge, "the blob is \(length) bytes; the limit is \(limit)")
        }
        switch state {
        case .complete(let size):
            guard size == length else {
                throw .badRequest("this blob is already held whole at \(size) bytes, not \(length)")
            }
            return .alreadyComplete(size: size)
        case .partial(let received, let held):
            guard held == length else {
                throw .badRequest("an upload of this blob at \(held) bytes is under way, not \(length)")
            }
            guard offset == received else { throw offsetMismatch(received) }
        case .absent:
            guard offset == 0 else { throw offsetMismatch(0) }
        }
        guard offset <= length else {
            throw .badRequest("Upload-Offset \(offset) is past Upload-Length \(length)")
        }
        return .append
    }

    package static func offsetMismatch(_ held: Int64) -> FerryServerError {
        FerryServerError(.uploadOffsetMismatch, "the server holds \(held) bytes of this blob; continue from Upload-Offset \(held)")
    }
}

/// The store-specific half of an upload: where the bytes go, and the hash
/// of the bytes held, saved with them.
package protocol BlobUploadTarget: Sendable {
    /// The checkpoint of the hash of the first bytes held (``SHA256Digest/checkpoint``),
    /// as the last write saved it; `nil` when none was saved.
    func savedHash() async throws -> [UInt8]?
    /// The bytes of `range` already held, to hash those the saved hash
    /// does not cover.
    func heldBytes(_ range: Range<Int64>) async throws -> BlobBytes
    /// Writes `chunk` at `position` (where the held bytes end). `hash` is
    /// the checkpoint of every byte up to the chunk's end, and `replacing`
    /// the one saved before it: a store that saves the hash with each chunk
    /// in one transaction (PostgreSQL) writes only if the saved one is still
    /// `replacing`, so a checkpoint never joins another upload's bytes.
    func write(_ chunk: ByteBuffer, at position: Int64, hash: [UInt8], replacing: [UInt8]?) async throws
    /// Saves `hash`, the checkpoint of every byte written so far, once those
    /// bytes are durable (a store that saves it with each chunk does nothing).
    func saveHash(_ hash: [UInt8]) async throws
    /// Every byte is in and hashed right: make the blob readable, atomically.
    func complete(size: Int64) async throws
    /// The bytes hashed wrong: keep nothing.
    func discard() async throws
    /// Marks the complete blob as just used (see ``BlobStore/touch(_:)``);
    /// the state after.
    func touch() async throws -> BlobState
}

/// Bytes of partial uploads read back to resume their hash, since the
/// store was made: zero while every resumed upload found its saved hash
/// current.
package final class BlobRehashCount: Sendable {
    private let bytes = NIOLockedValueBox<Int64>(0)

    package init() {}

    package var value: Int64 { bytes.withLockedValue { $0 } }

    func add(_ count: Int64) {
        bytes.withLockedValue { $0 += count }
    }
}

/// Runs an append for either store: checks it, resumes the hash of the
/// bytes held from the checkpoint saved with them, hashes the bytes
/// arriving, writes them in chunks of `chunkSize` (each with the hash up to
/// its end), and completes or discards the blob when the last byte is in.
package enum BlobUpload {
    package static let chunkSize = 1 << 20
    /// A store that saves the hash apart from the bytes (the filesystem)
    /// makes them durable and saves it this often, and when a request ends:
    /// a resume after a crash reads back at most this much.
    package static let savedHashInterval: Int64 = 64 << 20

    package static func append(
        to key: BlobKey, state: BlobState, length: Int64, offset: Int64, limit: Int64,
        bytes: some AsyncSequence<ByteBuffer, any Error>, target: some BlobUploadTarget, rehashed: BlobRehashCount
    ) async throws -> BlobState {
        if case .alreadyComplete(let size) = try BlobUploadRules.check(state: state, offset: offset, length: length, limit: limit) {
            // The uploader names the blob in a push next: its age counts from now, unless a collector took it first.
            guard case .complete = try await target.touch() else { throw BlobUploadRules.offsetMismatch(0) }
            return .complete(size: size)
        }
        var (hasher, stored) = try await resumedHash(held: offset, target: target, rehashed: rehashed)
        var position = offset
        var saved = offset
        var pending = ByteBuffer()
        pending.reserveCapacity(chunkSize)
        func flush() async throws {
            guard pending.readableBytes > 0 else { return }
            pending.withUnsafeReadableBytes { hasher.update($0) }
            let checkpoint = hasher.checkpoint
            try await target.write(pending, at: position, hash: checkpoint, replacing: stored)
            stored = checkpoint
            position += Int64(pending.readableBytes)
            pending.clear()
            if position - saved >= savedHashInterval {
                try await target.saveHash(checkpoint)
                saved = position
            }
        }
        do {
            for try await var piece in bytes {
                guard position + Int64(pending.readableBytes) + Int64(piece.readableBytes) <= length else {
                    // The declared length is wrong, so these bytes can never hash right.
                    try await target.discard()
                    throw FerryServerError.badRequest("the body runs past Upload-Length \(length); nothing of this upload was kept")
                }
                while piece.readableBytes > 0 {
                    var slice = piece.readSlice(length: min(piece.readableBytes, chunkSize - pending.readableBytes))!
                    pending.writeBuffer(&slice)
                    if pending.readableBytes == chunkSize { try await flush() }
                }
            }
            try await flush()
        } catch {
            // The body broke off: the hash of what was written is kept for the resume.
            if position > saved { try? await target.saveHash(hasher.checkpoint) }
            throw error
        }
        guard position == length else {
            if position > saved { try await target.saveHash(hasher.checkpoint) }
            return .partial(received: position, length: length)
        }
        let digest = hasher.finalize()
        guard digest == key.sha256 else {
            try await target.discard()
            throw FerryServerError(.hashMismatch, "the \(length) bytes hash to \(digest), not \(key.sha256); nothing was kept")
        }
        try await target.complete(size: length)
        return .complete(size: length)
    }

    /// The hash of the `held` bytes: the saved checkpoint, and the held
    /// bytes it does not cover read back and hashed (all of them when no
    /// checkpoint was saved, or one that claims more bytes than are held);
    /// and the checkpoint as it was saved, which the next write replaces.
    static func resumedHash(
        held: Int64, target: some BlobUploadTarget, rehashed: BlobRehashCount
    ) async throws -> (hasher: SHA256Digest, stored: [UInt8]?) {
        let saved = try await target.savedHash()
        guard held > 0 else { return (SHA256Digest(), saved) }
        var hasher = SHA256Digest()
        if let saved, let resumed = try? SHA256Digest(resuming: saved), resumed.byteCount <= held {
            hasher = resumed
        }
        let covered = Int64(hasher.byteCount)
        guard covered < held else { return (hasher, saved) }
        rehashed.add(held - covered)
        for try await chunk in try await target.heldBytes(covered..<held) {
            chunk.withUnsafeReadableBytes { hasher.update($0) }
        }
        return (hasher, saved)
    }
}

/// Lowercase hex of a digest.
func hexDigest(_ digest: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    for byte in digest {
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 0x0f)])
    }
    return String(decoding: text, as: UTF8.self)
}
