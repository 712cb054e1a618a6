import Crypto
@testable import FerryServer
import FerryTestSupport
import Foundation
import NIOCore
import Testing

/// The ``BlobStore`` contract, on both implementations: files beside the
/// real SQLite store, and chunks in the real PostgreSQL store.
@Suite(.postgresTurns) struct BlobStoreTests {
    static func bytes(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }

    static func key(_ bytes: [UInt8], scope: String = "user:alice") throws -> BlobKey {
        try BlobKey(scope: scope, sha256: hexDigest(SHA256.hash(data: bytes)))
    }

    /// `bytes` as a body arriving in pieces of `piece` bytes.
    static func body(_ bytes: some Collection<UInt8>, piece: Int = 70_000) -> AsyncThrowingStream<ByteBuffer, any Error> {
        let bytes = Array(bytes)
        return AsyncThrowingStream { continuation in
            var start = 0
            while start < bytes.count {
                continuation.yield(ByteBuffer(bytes: bytes[start..<min(start + piece, bytes.count)]))
                start += piece
            }
            continuation.finish()
        }
    }

    static func read(_ store: any BlobStore, _ key: BlobKey, _ range: Range<Int64>) async throws -> [UInt8] {
        var out: [UInt8] = []
        for try await chunk in try await store.read(key, range: range) { out += chunk.readableBytesView }
        return out
    }

    @Test(arguments: StoreKind.available) func aWholeUploadIsReadBackWholeAndInRanges(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let blobs = try server.store.makeBlobStore(maxBlobBytes: 1 << 30)
            let data = Self.bytes(3 << 20 + 12_345)  // several chunks and a tail
            let key = try Self.key(data)
            #expect(try await blobs.state(of: key) == .absent)
            let state = try await blobs.append(to: key, length: Int64(data.count), offset: 0, bytes: Self.body(data))
            #expect(state == .complete(size: Int64(data.count)))
            #expect(try await blobs.state(of: key) == .complete(size: Int64(data.count)))
            #expect(try await Self.read(blobs, key, 0..<Int64(data.count)) == data)
            let middle: Range<Int64> = 1_048_000..<2_100_000  // across a chunk boundary
            #expect(try await Self.read(blobs, key, middle) == Array(data[Int(middle.lowerBound)..<Int(middle.upperBound)]))
            // Uploading it again changes nothing.
            #expect(try await blobs.append(to: key, length: Int64(data.count), offset: 0, bytes: Self.body([])) == .complete(size: Int64(data.count)))
            let listed = try await blobs.list()
            #expect(listed.map(\.key) == [key] && listed[0].complete)
            // Touching it moves its time forward (the collector counts its age from then).
            try await Task.sleep(for: .milliseconds(1100))
            try await blobs.touch(key)
            let touched = try await blobs.list()
            #expect(touched[0].modified > listed[0].modified)
            try await blobs.remove(key)
            #expect(try await blobs.state(of: key) == .absent)
        }
    }

    @Test(arguments: StoreKind.available) func anInterruptedUploadResumesFromTheHeldOffset(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let blobs = try server.store.makeBlobStore(maxBlobBytes: 1 << 30)
            let data = Self.bytes(2 << 20 + 999, seed: 3)
            let key = try Self.key(data)
            let length = Int64(data.count)
            let cut = 1_500_000
            // The body ends early (the connection dropped): what arrived is held.
            let first = try await blobs.append(to: key, length: length, offset: 0, bytes: Self.body(data[..<cut]))
            #expect(first == .partial(received: Int64(cut), length: length))
            #expect(try await blobs.state(of: key) == .partial(received: Int64(cut), length: length))
            // Nobody reads a partial blob.
            await #expect(throws: FerryServerError.self) { try await blobs.read(key, range: 0..<1) }
            // Resuming from anywhere else is refused with where to continue.
            let wrong = await #expect(throws: FerryServerError.self) {
                try await blobs.append(to: key, length: length, offset: 0, bytes: Self.body(data))
            }
            #expect(wrong?.code == .uploadOffsetMismatch && wrong?.message.contains("\(cut)") == true)
            let done = try await blobs.append(to: key, length: length, offset: Int64(cut), bytes: Self.body(data[cut...]))
            #expect(done == .complete(size: length))
            #expect(try await Self.read(blobs, key, 0..<length) == data)
        }
    }

    @Test(arguments: StoreKind.available) func bytesThatHashToAnotherNameAreNotKept(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let blobs = try server.store.makeBlobStore(maxBlobBytes: 1 << 30)
            let data = Self.bytes(100_000)
            let key = try Self.key(data)
            var forged = data
            forged[50_000] ^= 0xff
            let error = await #expect(throws: FerryServerError.self) {
                try await blobs.append(to: key, length: Int64(data.count), offset: 0, bytes: Self.body(forged))
            }
            #expect(error?.code == .hashMismatch && error?.status == 422)
            #expect(try await blobs.state(of: key) == .absent)
            #expect(try await blobs.list().isEmpty)
        }
    }

    @Test(arguments: StoreKind.available) func limitsAndBadInputAreRefused(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let blobs = try server.store.makeBlobStore(maxBlobBytes: 1000)
            let data = Self.bytes(2000)
            let key = try Self.key(data)
            let tooLarge = await #expect(throws: FerryServerError.self) {
                try await blobs.append(to: key, length: 2000, offset: 0, bytes: Self.body(data))
            }
            #expect(tooLarge?.code == .payloadTooLarge)
            #expect(try await blobs.state(of: key) == .absent)
            // More bytes than the declared length.
            let small = Self.bytes(500)
            let smallKey = try Self.key(small)
            let overrun = await #expect(throws: FerryServerError.self) {
                try await blobs.append(to: smallKey, length: 400, offset: 0, bytes: Self.body(small))
            }
            #expect(overrun?.code == .badRequest)
            #expect(try await blobs.state(of: smallKey) == .absent)
            #expect(throws: FerryServerError.self) { try BlobKey(scope: "user:alice", sha256: "not-a-digest") }
            // A range outside a complete blob.
            _ = try await blobs.append(to: smallKey, length: 500, offset: 0, bytes: Self.body(small))
            let outside = await #expect(throws: FerryServerError.self) { try await blobs.read(smallKey, range: 400..<600) }
            #expect(outside?.code == .rangeNotSatisfiable)
        }
    }

    @Test func byteRangesFollowRFC9110() throws {
        #expect(try ByteRange.parse(nil, size: 1000) == nil)
        #expect(try ByteRange.parse("bytes=0-99", size: 1000) == 0..<100)
        #expect(try ByteRange.parse("bytes=100-", size: 1000) == 100..<1000)
        #expect(try ByteRange.parse("bytes=-10", size: 1000) == 990..<1000)
        #expect(try ByteRange.parse("bytes=-5000", size: 1000) == 0..<1000)
        #expect(try ByteRange.parse("bytes=900-5000", size: 1000) == 900..<1000)
        #expect(try ByteRange.parse("bytes=0-1,5-6", size: 1000) == nil)  // several: the whole
        #expect(try ByteRange.parse("items=0-1", size: 1000) == nil)
        #expect(throws: FerryServerError.self) { try ByteRange.parse("bytes=1000-", size: 1000) }
        #expect(throws: FerryServerError.self) { try ByteRange.parse("bytes=-0", size: 1000) }
    }

    @Test func uploadRulesDecideWhereAnAppendMayStart() throws {
        #expect(try BlobUploadRules.check(state: .absent, offset: 0, length: 10, limit: 100) == .append)
        #expect(try BlobUploadRules.check(state: .partial(received: 4, length: 10), offset: 4, length: 10, limit: 100) == .append)
        #expect(try BlobUploadRules.check(state: .complete(size: 10), offset: 0, length: 10, limit: 100) == .alreadyComplete(size: 10))
        #expect { try BlobUploadRules.check(state: .absent, offset: 3, length: 10, limit: 100) } throws: {
            ($0 as? FerryServerError)?.code == .uploadOffsetMismatch
        }
        #expect { try BlobUploadRules.check(state: .partial(received: 4, length: 10), offset: 4, length: 11, limit: 100) } throws: {
            ($0 as? FerryServerError)?.code == .badRequest
        }
        #expect { try BlobUploadRules.check(state: .absent, offset: 0, length: 101, limit: 100) } throws: {
            ($0 as? FerryServerError)?.code == .payloadTooLarge
        }
    }
}
