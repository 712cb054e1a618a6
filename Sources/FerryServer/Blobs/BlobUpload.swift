import Crypto
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

/// The store-specific half of an upload: where the bytes go.
package protocol BlobUploadTarget: Sendable {
    /// The bytes already held, to hash before continuing a resumed upload.
    func heldBytes(count: Int64) async throws -> BlobBytes
    /// Writes `chunk` at `position` (where the held bytes end).
    func write(_ chunk: ByteBuffer, at position: Int64) async throws
    /// Every byte is in and hashed right: make the blob readable, atomically.
    func complete(size: Int64) async throws
    /// The bytes hashed wrong: keep nothing.
    func discard() async throws
    /// Marks the complete blob as just used (see ``BlobStore/touch(_:)``);
    /// the state after.
    func touch() async throws -> BlobState
}

/// Runs an append for either store: checks it, hashes the bytes held and
/// the bytes arriving, writes them in chunks of `chunkSize`, and completes
/// or discards the blob when the last byte is in.
package enum BlobUpload {
    package static let chunkSize = 1 << 20

    package static func append(
        to key: BlobKey, state: BlobState, length: Int64, offset: Int64, limit: Int64,
        bytes: some AsyncSequence<ByteBuffer, any Error>, target: some BlobUploadTarget
    ) async throws -> BlobState {
        if case .alreadyComplete(let size) = try BlobUploadRules.check(state: state, offset: offset, length: length, limit: limit) {
            // The uploader names the blob in a push next: its age counts from now, unless a collector took it first.
            guard case .complete = try await target.touch() else { throw BlobUploadRules.offsetMismatch(0) }
            return .complete(size: size)
        }
        var hasher = SHA256()
        if offset > 0 {
            for try await chunk in try await target.heldBytes(count: offset) {
                hasher.update(data: chunk.readableBytesView)
            }
        }
        var position = offset
        var pending = ByteBuffer()
        pending.reserveCapacity(chunkSize)
        func flush() async throws {
            guard pending.readableBytes > 0 else { return }
            try await target.write(pending, at: position)
            position += Int64(pending.readableBytes)
            pending.clear()
        }
        for try await var piece in bytes {
            guard position + Int64(pending.readableBytes) + Int64(piece.readableBytes) <= length else {
                // The declared length is wrong, so these bytes can never hash right.
                try await target.discard()
                throw FerryServerError.badRequest("the body runs past Upload-Length \(length); nothing of this upload was kept")
            }
            hasher.update(data: piece.readableBytesView)
            while piece.readableBytes > 0 {
                var slice = piece.readSlice(length: min(piece.readableBytes, chunkSize - pending.readableBytes))!
                pending.writeBuffer(&slice)
                if pending.readableBytes == chunkSize { try await flush() }
            }
        }
        try await flush()
        guard position == length else { return .partial(received: position, length: length) }
        let digest = hexDigest(hasher.finalize())
        guard digest == key.sha256 else {
            try await target.discard()
            throw FerryServerError(.hashMismatch, "the \(length) bytes hash to \(digest), not \(key.sha256); nothing was kept")
        }
        try await target.complete(size: length)
        return .complete(size: length)
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
