import Foundation

/// A blob's bytes, read from a file from `offset` a chunk at a time: what
/// a ``SyncTransport`` sends for an upload. For an attachment file sealed
/// at rest (``FerryConfiguration/attachmentCipher``) each chunk is opened
/// and checked as it is read, so the bytes are always the blob's own.
///
/// ```swift
/// let reader = try BlobReader(file: photoURL, from: 1_048_576)
/// while let chunk = try reader.next() { send(chunk) }
/// ```
///
/// One consumer at a time; not for concurrent use.
public final class BlobReader: @unchecked Sendable {
    /// Where in the blob reading started.
    public let offset: Int64
    private let handle: FileHandle
    private let url: URL
    private var sealed: Sealed?
    private var done = false

    private struct Sealed {
        var layout: SealedFileLayout
        var cipher: any AttachmentCipher
        var header: Data
        var chunks: Int64
        var next: Int64
        var skip: Int
    }

    /// Reads the plain file at `file` from `offset`.
    public convenience init(file: URL, from offset: Int64 = 0) throws {
        try self.init(file: file, from: offset, format: .plain)
    }

    init(file: URL, from offset: Int64, format: AttachmentFileFormat) throws {
        self.url = file
        self.offset = offset
        handle = try FileHandle(forReadingFrom: file)
        switch format {
        case .plain:
            sealed = nil
            try handle.seek(toOffset: UInt64(offset))
        case .sealed(let layout, let cipher):
            let header = try handle.read(upToCount: SealedFileLayout.headerSize) ?? Data()
            guard layout.accepts(header: header) else {
                try? handle.close()
                throw FerryError(.attachmentCorrupted, "\(file.path) is not a sealed attachment file (its header is wrong)")
            }
            let stored = Int64(try handle.seekToEnd())
            let body = stored - Int64(SealedFileLayout.headerSize)
            // Even an empty blob has a sealed last chunk.
            guard body >= Int64(cipher.overhead) else {
                try? handle.close()
                throw FerryError(.attachmentCorrupted, "\(file.path) holds no sealed chunk: it was cut short")
            }
            let chunks = (body + Int64(layout.sealedChunkSize) - 1) / Int64(layout.sealedChunkSize)
            sealed = Sealed(
                layout: layout, cipher: cipher, header: header, chunks: chunks,
                next: offset / Int64(layout.chunkSize), skip: Int(offset % Int64(layout.chunkSize)))
        }
    }

    deinit { try? handle.close() }

    /// The next bytes of the blob (at most 64 KiB), or `nil` at its end.
    ///
    /// - throws: ``FerryError`` `.attachmentCorrupted` when a sealed chunk
    ///   fails to open: changed, moved, or the file cut short.
    public func next() throws -> Data? {
        guard !done else { return nil }
        guard var sealed else {
            guard let chunk = try handle.read(upToCount: 64 << 10), !chunk.isEmpty else { return finish() }
            return chunk
        }
        guard sealed.next < sealed.chunks else { return finish() }
        let index = sealed.next
        try handle.seek(toOffset: UInt64(sealed.layout.offset(ofChunk: index)))
        let bytes = try handle.read(upToCount: sealed.layout.sealedChunkSize) ?? Data()
        let last = index == sealed.chunks - 1
        let plain: Data
        do {
            plain = try sealed.cipher.open(bytes, context: sealed.layout.context(header: sealed.header, index: index, last: last))
        } catch {
            throw FerryError(.attachmentCorrupted, "chunk \(index) of \(url.path) fails authentication: the file was changed or cut short")
        }
        guard last || plain.count == sealed.layout.chunkSize else {
            throw FerryError(.attachmentCorrupted, "chunk \(index) of \(url.path) holds \(plain.count) bytes, not \(sealed.layout.chunkSize)")
        }
        let skip = sealed.skip
        sealed.next += 1
        sealed.skip = 0
        self.sealed = sealed
        guard skip < plain.count else { return last ? finish() : try next() }
        return skip == 0 ? plain : Data(plain.dropFirst(skip))
    }

    /// Stops reading and closes the file.
    public func close() {
        _ = finish()
    }

    private func finish() -> Data? {
        if !done { try? handle.close() }
        done = true
        return nil
    }
}
