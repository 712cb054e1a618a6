import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A blob's bytes, appended to a file as they arrive: where a
/// ``SyncTransport`` writes a download. ``held`` says how many of the
/// blob's bytes it holds, which is where an interrupted download continues
/// (with a `Range` request). For an attachment file sealed at rest
/// (``FerryConfiguration/attachmentCipher``) the bytes are sealed a chunk at
/// a time as they come, never written in clear.
///
/// ```swift
/// let writer = try BlobWriter(appendingTo: partialURL)
/// request.headers["Range"] = "bytes=\(writer.held)-"
/// for try await chunk in body { try writer.write(chunk) }
/// try writer.flush()
/// ```
///
/// One producer at a time; not for concurrent use.
public final class BlobWriter: @unchecked Sendable {
    /// How many of the blob's bytes this writer holds.
    public private(set) var held: Int64
    private let url: URL
    private let handle: FileHandle
    private var sealed: Sealed?
    private var closed = false
    /// A write failed: what is on disk may be torn, so no more is written.
    private var failed = false

    private struct Sealed {
        var layout: SealedFileLayout
        var cipher: any AttachmentCipher
        var header: Data
        /// Chunks written so far.
        var written: Int64
        /// Bytes not sealed yet: the last chunk is sealed only once it is
        /// known to be the last (`finish()`).
        var pending = Data()
    }

    /// Appends to the plain file at `file`, creating it if need be.
    public convenience init(appendingTo file: URL) throws {
        try self.init(appendingTo: file, format: .plain)
    }

    /// Appends to `file`, continuing the bytes it holds. A sealed file keeps
    /// its whole chunks; a chunk torn by a crash is dropped (and fetched
    /// again).
    init(appendingTo file: URL, format: AttachmentFileFormat) throws {
        url = file
        if !FileManager.default.fileExists(atPath: file.path) {
            guard FileManager.default.createFile(atPath: file.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw AttachmentFiles.failure("create", file)
            }
        }
        handle = try FileHandle(forUpdating: file)
        let stored = Int64(try handle.seekToEnd())
        switch format {
        case .plain:
            held = stored
        case .sealed(let layout, let cipher):
            try handle.seek(toOffset: 0)
            let header = try handle.read(upToCount: SealedFileLayout.headerSize) ?? Data()
            guard layout.accepts(header: header) else {
                // Empty, or not a file this writer began: start it again.
                let fresh = layout.newHeader()
                try handle.truncate(atOffset: 0)
                try handle.write(contentsOf: fresh)
                sealed = Sealed(layout: layout, cipher: cipher, header: fresh, written: 0)
                held = 0
                return
            }
            var state = Sealed(layout: layout, cipher: cipher, header: header, written: 0)
            let body = stored - Int64(SealedFileLayout.headerSize)
            var whole = body / Int64(layout.sealedChunkSize)
            // The file's last chunk goes back to `pending`, to be sealed
            // again once the bytes after it are known: the short last chunk
            // of a finished file, or else the last whole one (which may be
            // the sealed last chunk of a finished file, and must not be
            // followed). A chunk that opens neither way was torn: dropped.
            let tail = body % Int64(layout.sealedChunkSize)
            let finishedShort = tail >= Int64(layout.overhead) ? Self.openChunk(whole, of: handle, stored: stored, state, last: [true]) : nil
            if let finishedShort {
                state.pending = finishedShort
            } else if whole > 0 {
                whole -= 1
                state.pending = Self.openChunk(whole, of: handle, stored: stored, state, last: [false, true]) ?? Data()
            }
            state.written = whole
            try handle.truncate(atOffset: UInt64(layout.offset(ofChunk: whole)))
            sealed = state
            held = whole * Int64(layout.chunkSize) + Int64(state.pending.count)
        }
    }

    /// Chunk `index`'s bytes, opened as the last chunk or not (tried in the
    /// order given), or `nil` when it opens neither way.
    private static func openChunk(_ index: Int64, of handle: FileHandle, stored: Int64, _ state: Sealed, last: [Bool]) -> Data? {
        let start = state.layout.offset(ofChunk: index)
        guard (try? handle.seek(toOffset: UInt64(start))) != nil,
            let bytes = try? handle.read(upToCount: Int(min(Int64(state.layout.sealedChunkSize), stored - start)))
        else { return nil }
        for isLast in last {
            let context = state.layout.context(header: state.header, index: index, last: isLast)
            if let plain = try? state.cipher.open(bytes, context: context) { return plain }
        }
        return nil
    }

    /// Creates `file`, which must not exist (a new attachment in `staging/`).
    init(creating file: URL, format: AttachmentFileFormat) throws {
        url = file
        let descriptor = open(file.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { throw AttachmentFiles.failure("create", file) }
        handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        held = 0
        if case .sealed(let layout, let cipher) = format {
            let header = layout.newHeader()
            sealed = Sealed(layout: layout, cipher: cipher, header: header, written: 0)
            try write(raw: header)
        }
    }

    deinit { if !closed { try? handle.close() } }

    /// Appends `data`, the blob's next bytes.
    ///
    /// - throws: ``FerryError`` `.storageFull` when the disk is full, or
    ///   `.attachmentFileFailed` when the file cannot be written otherwise;
    ///   the writer then refuses more, and a new one continues from what
    ///   reached the disk whole.
    public func write(_ data: Data) throws {
        guard !failed else { throw AttachmentFiles.failure("continue after a failed write to", url) }
        guard var state = sealed else {
            try write(raw: data)
            held += Int64(data.count)
            return
        }
        state.pending.append(data)
        let size = state.layout.chunkSize
        // Seal every chunk that has bytes after it: none of those is the last.
        while state.pending.count > size {
            let context = state.layout.context(header: state.header, index: state.written, last: false)
            try write(raw: try state.cipher.seal(Data(state.pending.prefix(size)), context: context))
            state.written += 1
            state.pending = Data(state.pending.dropFirst(size))
            sealed = state
        }
        sealed = state
        held += Int64(data.count)
    }

    /// Syncs what is written to disk. A sealed file keeps up to one chunk
    /// in memory until the blob is complete; a crash loses that much, no more.
    public func flush() throws {
        do { try handle.synchronize() } catch { throw AttachmentFiles.failure("sync", url, error) }
    }

    /// The blob is complete: seals its last chunk, syncs and closes.
    func finish() throws {
        guard !failed else { throw AttachmentFiles.failure("finish after a failed write to", url) }
        if var state = sealed {
            let context = state.layout.context(header: state.header, index: state.written, last: true)
            try write(raw: try state.cipher.seal(state.pending, context: context))
            state.written += 1
            state.pending = Data()
            sealed = state
        }
        try flush()
        close()
    }

    /// Closes the file, keeping what was written.
    public func close() {
        if !closed { try? handle.close() }
        closed = true
    }

    private func write(raw data: Data) throws {
        do {
            try handle.write(contentsOf: data)
        } catch {
            failed = true
            throw AttachmentFiles.failure("write", url, error)
        }
    }
}
