import CFerrySHA256
import Testing

@testable import FerryProtocol

/// SHA-256 against FIPS 180-4's vectors, the processor's SHA instructions
/// against the portable C, and a hash saved at any byte and resumed
/// elsewhere against one never stopped.
@Suite struct SHA256DigestTests {
    static func digest(_ bytes: [UInt8]) -> String {
        var hash = SHA256Digest()
        hash.update(bytes)
        return hash.finalize()
    }

    @Test func fipsVectors() {
        #expect(Self.digest([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Self.digest(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            Self.digest(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        var million = SHA256Digest()
        let a = [UInt8](repeating: UInt8(ascii: "a"), count: 1000)
        for _ in 0..<1000 { million.update(a) }
        #expect(million.finalize() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Where the processor has SHA instructions, every length from 0 to 4
    /// blocks and a larger one hash alike either way (elsewhere both calls
    /// are the portable code, and there is nothing to compare).
    @Test(.enabled(if: SHA256Digest.isAccelerated)) func theSHAInstructionsAgreeWithThePortableCode() {
        let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 7) }
        for count in Array(0..<257) + [10_000 / 64 * 64] {
            let blocks = count / 64
            var fast: [UInt32] = [1, 2, 3, 4, 5, 6, 7, 8], portable = fast
            bytes.withUnsafeBufferPointer { data in
                ferry_sha256_blocks(&fast, data.baseAddress!, blocks)
                ferry_sha256_blocks_portable(&portable, data.baseAddress!, blocks)
            }
            #expect(fast == portable, "\(count) bytes")
        }
    }

    @Test func aCheckpointAtAnyByteResumesToTheSameDigest() throws {
        let bytes = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let whole = Self.digest(bytes)
        for split in 0...bytes.count {
            var first = SHA256Digest()
            first.update(bytes[..<split])
            let saved = first.checkpoint
            #expect(saved.count == 41 + split % 64)
            var resumed = try SHA256Digest(resuming: saved)
            #expect(resumed.byteCount == UInt64(split))
            resumed.update(bytes[split...])
            #expect(resumed.finalize() == whole, "split at \(split)")
        }
        #expect(throws: SHA256Digest.InvalidCheckpoint.self) { try SHA256Digest(resuming: [2] + [UInt8](repeating: 0, count: 40)) }
        #expect(throws: SHA256Digest.InvalidCheckpoint.self) { try SHA256Digest(resuming: [UInt8](repeating: 1, count: 12)) }
        // A byte count that disagrees with the unfinished block.
        var wrong = SHA256Digest()
        wrong.update([1, 2, 3])
        #expect(throws: SHA256Digest.InvalidCheckpoint.self) { try SHA256Digest(resuming: wrong.checkpoint.dropLast()) }
    }
}
