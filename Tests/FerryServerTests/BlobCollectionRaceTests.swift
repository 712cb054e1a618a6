import Crypto
@testable import FerryPostgres
@testable import FerryServer
import FerryTestSupport
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Blob garbage collection against everything that can land between its
/// listing and its removals, on both blob stores: each interleaving is
/// forced through the collector's `afterListing` hook, so none depends on
/// timing. Blobs are made old by moving their time back an hour.
@Suite(.postgresTurns) struct BlobCollectionRaceTests {
    static func cutoff() -> Date { Date().addingTimeInterval(-60) }

    /// Moves a blob's last-write time an hour back, as if written then.
    static func age(_ key: BlobKey, in blobs: any BlobStore, server: StoreUnderTest) async throws {
        let past = Date().addingTimeInterval(-3600)
        if let files = blobs as? FileBlobStore {
            let paths = FileBlobStore.Paths(files.directory, key)
            for url in [paths.complete, paths.upload] where FileManager.default.fileExists(atPath: url.path) {
                try FileManager.default.setAttributes([.modificationDate: past], ofItemAtPath: url.path)
            }
        } else {
            let store = try #require(server.store as? PostgresSyncStore)
            let logger = store.logger
            try await store.transaction(.serializable) { connection, _ in
                try await connection.query(
                    """
                    UPDATE ferry_blobs SET modified_at = \(past) WHERE scope = \(key.scope) AND sha256 = \(key.sha256)
                    """, logger: logger)
            }
        }
    }

    /// An old, complete blob no row names.
    static func oldBlob(_ blobs: any BlobStore, _ server: StoreUnderTest, seed: UInt8) async throws -> (BlobKey, [UInt8]) {
        let data = BlobStoreTests.bytes(200_000, seed: seed)
        let key = try BlobStoreTests.key(data)
        _ = try await blobs.append(to: key, length: Int64(data.count), offset: 0, bytes: BlobStoreTests.body(data))
        try await age(key, in: blobs, server: server)
        return (key, data)
    }

    /// An old upload of a 1.5 MB blob, cut at `cut` bytes.
    static func oldPartialUpload(
        _ blobs: any BlobStore, _ server: StoreUnderTest,
        seed: UInt8
    ) async throws -> (BlobKey, [UInt8], cut: Int) {
        let data = BlobStoreTests.bytes(1_500_000, seed: seed)
        let key = try BlobStoreTests.key(data)
        let cut = 1_100_000
        _ = try await blobs.append(to: key, length: Int64(data.count), offset: 0, bytes: BlobStoreTests.body(data[..<cut]))
        try await age(key, in: blobs, server: server)
        return (key, data, cut)
    }

    @Test(arguments: StoreKind.available) func anOldUnnamedBlobIsCollected(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let blobs = try server.store.makeBlobStore(maxBlobBytes: 1 << 30)
            let (key, _) = try await Self.oldBlob(blobs, server, seed: 1)
            #expect(try await BlobGarbageRules.collect(store: server.store, blobs: blobs, before: Self.cutoff()) == 1)
            #expect(try await blobs.state(of: key) == .absent)
        }
    }

    /// A writer's `HEAD` between the listing and the removal (it will push a
    /// row naming the blob next) keeps the blob.
    @Test(arguments: StoreKind.available) func aTouchAfterTheListingKeepsTheBlob(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let blobs = try server.store.makeBlobStore(maxBlobBytes: 1 << 30)
            let (key, data) = try await Self.oldBlob(blobs, server, seed: 2)
            let removed = try await BlobGarbageRules.collect(store: server.store, blobs: blobs, before: Self.cutoff()) {
                let state = try await blobs.touch(key)
                #expect(state == .complete(size: Int64(data.count)))
            }
            #expect(removed == 0)
            #expect(try await BlobStoreTests.read(blobs, key, 0..<Int64(data.count)) == data)
        }
    }

    /// A touch that comes after the removal says the blob is gone, so the
    /// client uploads it again instead of naming a blob the server lacks.
    @Test(arguments: StoreKind.available) func aTouchAfterTheRemovalFindsTheBlobGone(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let blobs = try server.store.makeBlobStore(maxBlobBytes: 1 << 30)
            let (key, _) = try await Self.oldBlob(blobs, server, seed: 3)
            #expect(try await blobs.remove(key, ifUntouchedSince: Self.cutoff()))
            #expect(try await blobs.touch(key) == .absent)
        }
    }

    /// An upload of a blob already held whole (the client's `PUT` found it
    /// there) counts as a use, like a `HEAD`.
    @Test(arguments: StoreKind.available) func aRepeatedUploadAfterTheListingKeepsTheBlob(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let blobs = try server.store.makeBlobStore(maxBlobBytes: 1 << 30)
            let (key, data) = try await Self.oldBlob(blobs, server, seed: 4)
            let removed = try await BlobGarbageRules.collect(store: server.store, blobs: blobs, before: Self.cutoff()) {
                let state = try await blobs.append(to: key, length: Int64(data.count), offset: 0, bytes: BlobStoreTests.body(data))
                #expect(state == .complete(size: Int64(data.count)))
            }
            #expect(removed == 0)
            #expect(try await blobs.state(of: key) == .complete(size: Int64(data.count)))
        }
    }

    /// An abandoned-looking upload that is resumed and finished after the
    /// listing is kept whole.
    @Test(arguments: StoreKind.available) func anUploadFinishedAfterTheListingIsKept(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let blobs = try server.store.makeBlobStore(maxBlobBytes: 1 << 30)
            let (key, data, cut) = try await Self.oldPartialUpload(blobs, server, seed: 5)
            let length = Int64(data.count)
            let removed = try await BlobGarbageRules.collect(store: server.store, blobs: blobs, before: Self.cutoff()) {
                let done = try await blobs.append(to: key, length: length, offset: Int64(cut), bytes: BlobStoreTests.body(data[cut...]))
                #expect(done == .complete(size: length))
            }
            #expect(removed == 0)
            #expect(try await BlobStoreTests.read(blobs, key, 0..<length) == data)
        }
    }

    /// The collector removes while an upload of the blob is under way (its
    /// body has started arriving and waits for more): the upload wins, and
    /// finishes whole.
    @Test(arguments: StoreKind.available) func anUploadUnderWayDuringTheRemovalIsKept(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let blobs = try server.store.makeBlobStore(maxBlobBytes: 1 << 30)
            let (key, data, cut) = try await Self.oldPartialUpload(blobs, server, seed: 6)
            let length = Int64(data.count)
            let body = GatedBody(Array(data[cut...]))
            let upload = Task { try await blobs.append(to: key, length: length, offset: Int64(cut), bytes: body) }
            let removed = try await BlobGarbageRules.collect(store: server.store, blobs: blobs, before: Self.cutoff()) {
                await body.started()  // the append has begun and asks for its bytes
            }
            body.release()
            #expect(removed == 0)
            #expect(try await upload.value == .complete(size: length))
            #expect(try await BlobStoreTests.read(blobs, key, 0..<length) == data)
        }
    }
}

/// A request body that tells when its reader first asks for bytes, then
/// holds them back until released.
final class GatedBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    typealias Failure = any Error
    private let bytes: [UInt8]
    private let state = NIOLockedValueBox(State())

    private struct State {
        var asked = false
        var askedWaiters: [CheckedContinuation<Void, Never>] = []
        var released = false
        var releaseWaiters: [CheckedContinuation<Void, Never>] = []
    }

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Returns once the reader has asked for the first bytes.
    func started() async {
        await withCheckedContinuation { continuation in
            let now = state.withLockedValue { state in
                if state.asked { return true }
                state.askedWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Lets the bytes through.
    func release() {
        let waiters = state.withLockedValue { state in
            state.released = true
            defer { state.releaseWaiters = [] }
            return state.releaseWaiters
        }
        waiters.forEach { $0.resume() }
    }

    fileprivate func ask() async {
        let waiters = state.withLockedValue { state in
            state.asked = true
            defer { state.askedWaiters = [] }
            return state.askedWaiters
        }
        waiters.forEach { $0.resume() }
        await withCheckedContinuation { continuation in
            let now = state.withLockedValue { state in
                if state.released { return true }
                state.releaseWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let body: GatedBody
        var sent = false

        mutating func next() async throws -> ByteBuffer? {
            guard !sent else { return nil }
            sent = true
            await body.ask()
            return ByteBuffer(bytes: body.bytes)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(body: self) }
}
