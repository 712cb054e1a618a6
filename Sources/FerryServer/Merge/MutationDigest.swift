import FerryProtocol
import Foundation

/// A 64-bit fingerprint of what a mutation says (everything but its id), so
/// the server can tell a true replay from a different edit sent under an id
/// it already applied.
///
/// A device resends a mutation it never heard back about with the same id and
/// the same frozen values: the fingerprints match, and the push is a replay.
/// A copy of the device's database (a phone's backup restored onto a new
/// phone while the old one still syncs) numbers its own new edits from where
/// the copy stood, under the same client id: their fingerprints differ from
/// what the original pushed under those ids, and the server says so instead
/// of dropping them as replays.
///
/// The fingerprint is FNV-1a over a canonical form of the decoded mutation
/// (columns in byte order of their names), so a resend encoded differently
/// (another key order, another number spelling) still matches.
///
/// ```swift
/// let digest = MutationDigest(mutation)
/// let sameEdit = MutationDigest(resent) == digest
/// ```
package struct MutationDigest: Hashable, Sendable {
    package let rawValue: Int64

    package init(rawValue: Int64) {
        self.rawValue = rawValue
    }

    package init(_ mutation: Mutation) {
        var hash = FNV1a()
        hash.add(mutation.table)
        hash.add(mutation.rowID)
        hash.add(mutation.scope)
        hash.add(mutation.operation == .delete ? 1 as UInt8 : 0)
        hash.add(mutation.baseVersion == nil ? 0 as UInt8 : 1)
        hash.add(UInt64(bitPattern: mutation.baseVersion ?? 0))
        hash.add(UInt64(bitPattern: mutation.hlc.rawValue))
        // The members sorted once, with their values: looking each name up again hashed it again.
        let members = mutation.columns.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        hash.add(UInt64(members.count))
        for (name, value) in members {
            hash.add(name)
            switch value {
            case .null:
                hash.add(0 as UInt8)
            case .integer(let value):
                hash.add(1 as UInt8)
                hash.add(UInt64(bitPattern: value))
            case .real(let value):
                hash.add(2 as UInt8)
                hash.add(value.bitPattern)
            case .text(let value):
                hash.add(3 as UInt8)
                hash.add(value)
            case .blob(let value):
                hash.add(4 as UInt8)
                hash.add(UInt64(value.count))
                for byte in value { hash.add(byte) }
            }
        }
        rawValue = Int64(bitPattern: hash.value)
    }

    /// The digests of consecutive mutations as one value to store: each
    /// digest's eight bytes, little-endian, in id order.
    package static func packed(_ digests: [MutationDigest]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digests.count * 8)
        for digest in digests {
            withUnsafeBytes(of: UInt64(bitPattern: digest.rawValue).littleEndian) { bytes.append(contentsOf: $0) }
        }
        return bytes
    }

    /// The digests ``packed(_:)`` stored for the mutations from `firstID`,
    /// by mutation id. Bytes past the last whole digest are ignored.
    package static func unpacked(_ bytes: some Collection<UInt8>, firstID: Int64) -> [Int64: MutationDigest] {
        var digests: [Int64: MutationDigest] = [:]
        var id = firstID
        var index = bytes.startIndex
        while bytes.distance(from: index, to: bytes.endIndex) >= 8 {
            var value: UInt64 = 0
            for shift in stride(from: 0, to: 64, by: 8) {
                value |= UInt64(bytes[index]) << UInt64(shift)
                index = bytes.index(after: index)
            }
            digests[id] = MutationDigest(rawValue: Int64(bitPattern: value))
            id += 1
        }
        return digests
    }
}

/// FNV-1a, 64 bits: stable across processes and platforms (Swift's `Hasher`
/// is seeded per process), and cheap for a push's few hundred bytes a row.
private struct FNV1a {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func add(_ byte: UInt8) {
        value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
    }

    mutating func add(_ word: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { add(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
    }

    /// A string's UTF-8 bytes, then its length, so `"ab" + "c"` and `"a" + "bc"` differ.
    mutating func add(_ text: String) {
        var text = text
        // From the bytes where they are: iterating the view a byte at a time was most of a digest.
        let count = text.withUTF8 { bytes in
            var value = self.value
            for byte in bytes { value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
            self.value = value
            return bytes.count
        }
        add(UInt64(count))
    }
}
