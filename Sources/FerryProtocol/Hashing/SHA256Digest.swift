import CFerrySHA256

/// SHA-256 (FIPS 180-4), incremental, whose state can be saved part way and
/// resumed in another process: Ferry hashes attachments while writing them
/// on a device, and the server keeps an upload's hash beside its bytes so
/// a resumed or windowed upload hashes only the bytes that are new.
///
/// The block function is C (`CFerrySHA256`), with the SHA instructions of
/// x86-64 where the processor has them.
///
/// ```swift
/// var hash = SHA256Digest()
/// hash.update(Array("ab".utf8))
/// let saved = hash.checkpoint                  // 42 bytes: keep them anywhere
/// var resumed = try SHA256Digest(resuming: saved)
/// resumed.update(Array("c".utf8))
/// resumed.finalize()   // "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// ```
package struct SHA256Digest: Sendable {
    private var state: [UInt32] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
    /// Bytes of the block not yet full (fewer than 64).
    private var block: [UInt8] = []
    /// Every byte given to `update`.
    package private(set) var byteCount: UInt64 = 0

    package init() {
        block.reserveCapacity(64)
    }

    package mutating func update(_ bytes: some Collection<UInt8>) {
        let handled = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if handled == nil { Array(bytes).withUnsafeBytes { update($0) } }
    }

    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        byteCount &+= UInt64(bytes.count)
        var rest = bytes[...]
        if !block.isEmpty {
            let take = min(64 - block.count, rest.count)
            block += rest.prefix(take)
            rest = rest.dropFirst(take)
            guard block.count == 64 else { return }
            block.withUnsafeBufferPointer { compress($0.baseAddress!, blocks: 1) }
            block.removeAll(keepingCapacity: true)
        }
        let whole = rest.count / 64
        if whole > 0, let start = UnsafeRawBufferPointer(rebasing: rest).baseAddress {
            compress(start.assumingMemoryBound(to: UInt8.self), blocks: whole)
        }
        block += rest.dropFirst(whole * 64)
    }

    private mutating func compress(_ data: UnsafePointer<UInt8>, blocks: Int) {
        state.withUnsafeMutableBufferPointer { ferry_sha256_blocks($0.baseAddress!, data, blocks) }
    }

    /// The digest as 64 lowercase hex digits.
    package mutating func finalize() -> String {
        let bits = byteCount &* 8
        var tail: [UInt8] = [0x80]
        tail += [UInt8](repeating: 0, count: (119 - Int(byteCount % 64)) % 64)
        for shift in stride(from: 56, through: 0, by: -8) { tail.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        let saved = byteCount
        update(tail)
        byteCount = saved
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for word in state {
            for shift in stride(from: 28, through: 0, by: -4) { text.append(digits[Int((word >> UInt32(shift)) & 0xf)]) }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Whether the block function uses the processor's SHA instructions.
    package static var isAccelerated: Bool { ferry_sha256_accelerated() != 0 }

    // MARK: - Saving and resuming

    /// The state as bytes: a version byte, the eight words and the byte
    /// count (big-endian), then the bytes of the unfinished block.
    package var checkpoint: [UInt8] {
        var bytes: [UInt8] = [1]
        bytes.reserveCapacity(41 + block.count)
        for word in state { for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt32(shift))) } }
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: byteCount >> UInt64(shift))) }
        return bytes + block
    }

    /// A checkpoint that is not one this type wrote.
    package struct InvalidCheckpoint: Error, Equatable {}

    /// Resumes the hash `checkpoint` saved.
    package init(resuming checkpoint: some Collection<UInt8>) throws(InvalidCheckpoint) {
        let bytes = Array(checkpoint)
        guard bytes.count >= 41, bytes[0] == 1, bytes.count - 41 < 64 else { throw InvalidCheckpoint() }
        self.init()
        for index in 0..<8 {
            state[index] = bytes[1 + 4 * index..<5 + 4 * index].reduce(0) { $0 << 8 | UInt32($1) }
        }
        byteCount = bytes[33..<41].reduce(0) { $0 << 8 | UInt64($1) }
        block = Array(bytes[41...])
        guard byteCount % 64 == UInt64(block.count) else { throw InvalidCheckpoint() }
    }
}
