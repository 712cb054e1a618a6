import Foundation

/// Where things are in an attachment file sealed by an ``AttachmentCipher``,
/// as pure arithmetic: a header, then the plaintext in chunks of
/// `chunkSize` bytes (the last one shorter, or empty for an empty file),
/// each sealed with `overhead` bytes more.
///
/// ```
/// header: "FERRYSEA" · version 1 · chunk size (UInt32, big-endian) · 16 random bytes naming the file
/// chunk i: cipher.seal(plaintext[i·c ..< (i+1)·c], context: header · i (UInt64, big-endian) · last (1 byte))
/// ```
///
/// ```swift
/// let layout = SealedFileLayout(overhead: 28)
/// layout.storedSize(plain: 100_000)   // 29 + 100_000 + 2 × 28
/// layout.plainSize(stored: 100_085)   // 100_000
/// ```
struct SealedFileLayout: Sendable, Hashable {
    static let magic = Data("FERRYSEA".utf8)
    static let version: UInt8 = 1
    static let headerSize = 8 + 1 + 4 + 16

    var chunkSize = 64 << 10
    var overhead: Int

    var sealedChunkSize: Int { chunkSize + overhead }

    /// The chunks holding `plain` bytes: at least one, so an empty file
    /// still has a last chunk that says it is complete.
    func chunkCount(plain: Int64) -> Int64 {
        max(1, (plain + Int64(chunkSize) - 1) / Int64(chunkSize))
    }

    /// The size on disk of a complete file of `plain` bytes.
    func storedSize(plain: Int64) -> Int64 {
        Int64(Self.headerSize) + plain + chunkCount(plain: plain) * Int64(overhead)
    }

    /// The plaintext size of a complete file of `stored` bytes, or `nil`
    /// when no complete file has that size.
    func plainSize(stored: Int64) -> Int64? {
        let body = stored - Int64(Self.headerSize)
        guard body >= Int64(overhead) else { return nil }
        let whole = body / Int64(sealedChunkSize), rest = body % Int64(sealedChunkSize)
        if rest == 0 { return whole * Int64(chunkSize) }
        // An empty last chunk is only an empty file's.
        guard rest > Int64(overhead) || (rest == Int64(overhead) && whole == 0) else { return nil }
        return whole * Int64(chunkSize) + rest - Int64(overhead)
    }

    /// A new file's header, naming it with 16 random bytes.
    func newHeader() -> Data {
        var header = Self.magic
        header.append(Self.version)
        withUnsafeBytes(of: UInt32(chunkSize).bigEndian) { header.append(contentsOf: $0) }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2 { withUnsafeBytes(of: generator.next() as UInt64) { header.append(contentsOf: $0) } }
        return header
    }

    /// Whether `header` is one this layout wrote.
    func accepts(header: Data) -> Bool {
        guard header.count == Self.headerSize, header.prefix(8) == Self.magic, header[header.startIndex + 8] == Self.version else {
            return false
        }
        let size = header.dropFirst(9).prefix(4).reduce(0) { $0 << 8 | Int($1) }
        return size == chunkSize
    }

    /// What chunk `index` is sealed with: its file, its place, and whether it is the last.
    func context(header: Data, index: Int64, last: Bool) -> Data {
        var context = header
        withUnsafeBytes(of: UInt64(index).bigEndian) { context.append(contentsOf: $0) }
        context.append(last ? 1 : 0)
        return context
    }

    /// Where chunk `index` starts in the file.
    func offset(ofChunk index: Int64) -> Int64 {
        Int64(Self.headerSize) + index * Int64(sealedChunkSize)
    }
}
