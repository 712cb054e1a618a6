import Ferry
import FerryTesting
import FerryHTTPClient
import FerryProtocol
@testable import FerryServer
import FerryTestSupport
import Foundation
import Testing

/// Attachments end to end: devices with their own files, a real
/// `ferry-server` on loopback, on both stores.
@Suite(.postgresTurns) struct AttachmentSyncTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    static func bytes(_ count: Int, seed: UInt64) -> Data {
        var state = seed
        return Data(
            (0..<count).map { _ in
                state = state &* 6364136223846793005 &+ 1442695040888963407
                return UInt8(truncatingIfNeeded: state >> 33)
            })
    }

    @Test(arguments: StoreKind.available) func anAttachmentAddedOfflineAppearsOnAnotherDeviceByteForByte(_ kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let a = try await Device.make("a", user: "alice", server: server, directory: directory)
            let eager = try await Device.make(
                "b", user: "alice", server: server, directory: directory,
                configureDatabase: { $0.attachmentDownloads = ["note": .eager] })
            let lazy = try await Device.make("c", user: "alice", server: server, directory: directory)
            // Offline: nothing has synced yet.
            try a.execute("INSERT INTO note(id, title) VALUES ('n1', 'with a photo')")
            let photo = Self.bytes(3 << 20 + 4321, seed: 1)
            let added = try await a.database.attachments.add(
                data: photo, to: "note", row: "n1", name: "photo.jpg",
                contentType: "image/jpeg")
            #expect(added.state == .localOnly && added.size == Int64(photo.count))
            let pushed = try await a.engine.sync()
            #expect(pushed.attachmentsUploaded == 1 && pushed.attachmentTransfersFailed == 0)
            #expect(try a.database.attachments.attachment(id: added.id)?.state == .uploaded)

            let pulled = try await eager.engine.sync()
            #expect(pulled.attachmentsDownloaded == 1)
            let onB = try eager.database.attachments.list(table: "note", row: "n1")
            #expect(onB.map(\.id) == [added.id] && onB[0].name == "photo.jpg" && onB[0].state == .uploaded)
            #expect(try eager.database.attachments.data(for: onB[0]) == photo)

            // On open: known after the sync, fetched when opened.
            try await lazy.engine.sync()
            let onC = try #require(try lazy.database.attachments.list(table: "note", row: "n1").first)
            #expect(onC.state == .missing)
            #expect(try lazy.database.attachments.localURL(for: onC) == nil)
            let url = try await lazy.engine.open(onC)
            #expect(try Data(contentsOf: url) == photo)
            #expect(try lazy.database.attachments.attachment(id: added.id)?.state == .uploaded)

            // Removing it removes it everywhere.
            try await a.database.attachments.remove(added)
            try await a.engine.sync()
            try await eager.engine.sync()
            #expect(try eager.database.attachments.list(table: "note", row: "n1").isEmpty)
        }
    }

    /// Attachments follow their row: deleting the row deletes its
    /// attachments on the deleting device at once, on every other device at
    /// their next sync (files too), and on the server, whose blob goes with
    /// the tombstones' collection. A `REPLACE` of a row keeps them.
    @Test(arguments: StoreKind.available) func aDeletedRowsAttachmentsGoFromEveryDeviceAndTheServer(_ kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let a = try await Device.make("a", user: "alice", server: server, directory: directory)
            let b = try await Device.make(
                "b", user: "alice", server: server, directory: directory,
                configureDatabase: { $0.attachmentDownloads = ["note": .eager] })
            try a.execute("INSERT INTO note(id, title) VALUES ('n1', 'with a scan'), ('n2', 'kept')")
            let scan = Self.bytes(80_000, seed: 11)
            let added = try await a.database.attachments.add(data: scan, to: "note", row: "n1")
            let kept = try await a.database.attachments.add(data: Self.bytes(90_000, seed: 12), to: "note", row: "n2")
            try await a.engine.sync()
            try await b.engine.sync()
            let onB = try #require(try b.database.attachments.list(table: "note", row: "n1").first)
            let fileOnA = try #require(try a.database.attachments.localURL(for: added))
            let fileOnB = try #require(try b.database.attachments.localURL(for: onB))

            // A REPLACE deletes and re-inserts the row in one statement: its attachments stay.
            try a.execute("INSERT OR REPLACE INTO note(id, title) VALUES ('n2', 'kept, replaced')")
            #expect(try a.database.attachments.list(table: "note", row: "n2").map(\.id) == [kept.id])

            try a.execute("DELETE FROM note WHERE id = 'n1'")
            #expect(try a.database.attachments.list(table: "note", row: "n1").isEmpty)
            try await a.engine.sync()
            try await b.engine.sync()
            #expect(try b.database.attachments.list(table: "note", row: "n1").isEmpty)
            #expect(try b.database.attachments.attachment(id: added.id) == nil)
            #expect(!FileManager.default.fileExists(atPath: fileOnA.path))
            #expect(!FileManager.default.fileExists(atPath: fileOnB.path))
            #expect(try b.database.attachments.list(table: "note", row: "n2").map(\.id) == [kept.id])
            #expect(try await server.rows("ferry_attachments", in: "user:alice").keys.sorted() == [kept.id])

            // The server keeps the blob while the tombstones are held, and collects it with them.
            let future = Date().addingTimeInterval(60)
            func held() async throws -> Set<String> { Set(try await server.blobs.list().map(\.key.sha256)) }
            #expect(try await held() == [added.sha256, kept.sha256])
            #expect(try await BlobGarbageRules.collect(store: server.store, blobs: server.blobs, before: future) == 0)
            _ = try await server.store.collectGarbage(before: future)
            #expect(try await BlobGarbageRules.collect(store: server.store, blobs: server.blobs, before: future) == 1)
            #expect(try await held() == [kept.sha256])
        }
    }

    @Test(arguments: StoreKind.available) func anUploadCutHalfwayResumesFromTheServersOffset(_ kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let cutter = UploadCutter(cutAt: 2_500_000, directory: directory.url)
            let a = try await Device.make(
                "a", user: "alice", server: server, directory: directory,
                transport: { ForwardingTransport.cutting($0, cutter) })
            try a.execute("INSERT INTO note(id, title) VALUES ('n1', 'audio')")
            let audio = Self.bytes(3 << 20 + 999, seed: 2)
            let added = try await a.database.attachments.add(data: audio, to: "note", row: "n1")
            // The cut is retried within the same sync, with the engine's backoff.
            let summary = try await a.engine.sync()
            #expect(summary.attachmentsUploaded == 1 && summary.attachmentTransfersFailed == 0)
            #expect(try a.database.attachments.attachment(id: added.id)?.state == .uploaded)
            let uploads = cutter.uploads
            // The upload that completed started where the server's copy
            // ended (whole 1 MiB chunks of the 2.5 MB that arrived), not at
            // zero. A retry sent before the server saw the cut is refused
            // (409) and asks again.
            #expect(uploads.first?.offset == 0)
            #expect(uploads.last?.offset == 2 << 20, "\(uploads)")
            #expect(uploads.last?.sent == Int64(audio.count) - (2 << 20))
            let b = try await Device.make("b", user: "alice", server: server, directory: directory)
            try await b.engine.sync()
            let onB = try #require(try b.database.attachments.list(table: "note", row: "n1").first)
            #expect(try Data(contentsOf: try await b.engine.open(onB)) == audio)
        }
    }

    @Test func theCacheEvictsTheLeastRecentlyOpenedDownloadsAndNeverAFileNotYetUploaded() async throws {
        try await SyncServer.with(.sqlite) { server in
            let a = try await Device.make("a", user: "alice", server: server, directory: directory)
            let b = try await Device.make(
                "b", user: "alice", server: server, directory: directory,
                configureDatabase: { $0.attachmentCacheLimit = 3_500_000 })
            try a.execute("INSERT INTO note(id, title) VALUES ('n1', 'scans')")
            var added: [Ferry.Attachment] = []
            for seed in 1...3 {
                added.append(try await a.database.attachments.add(data: Self.bytes(1_000_000, seed: UInt64(seed)), to: "note", row: "n1"))
            }
            try await a.engine.sync()
            try await b.engine.sync()
            // B's own file, not yet uploaded (B does not sync again): never evicted.
            let own = try await b.database.attachments.add(data: Self.bytes(1_000_000, seed: 9), to: "note", row: "n1")
            func state(_ attachment: Ferry.Attachment) throws -> AttachmentState? {
                try b.database.attachments.attachment(id: attachment.id)?.state
            }
            // Opened a few milliseconds apart, so each has its own "last opened".
            func open(_ attachment: Ferry.Attachment) async throws -> URL {
                try await Task.sleep(for: .milliseconds(5))
                return try await b.engine.open(attachment)
            }
            _ = try await open(added[0])
            _ = try await open(added[1])
            #expect(try state(added[0]) == .uploaded && state(added[1]) == .uploaded)
            _ = try await open(added[2])  // 4 MB held: the least recently opened download goes
            #expect(try state(added[0]) == .missing)
            #expect(try state(added[1]) == .uploaded && state(added[2]) == .uploaded && state(own) == .localOnly)
            _ = try await open(added[1])  // opened again: now more recent than the third
            let again = try await open(added[0])  // downloads again; the server's copy is untouched
            #expect(try Data(contentsOf: again) == Self.bytes(1_000_000, seed: 1))
            #expect(try state(added[2]) == .missing && state(added[1]) == .uploaded && state(own) == .localOnly)
            #expect(try b.database.attachments.data(for: own) == Self.bytes(1_000_000, seed: 9))
            #expect(try await a.engine.open(added[2]) == a.database.attachments.localURL(for: added[2]))
        }
    }

    @Test func aTransferReportsItsProgressOnTheAttachment() async throws {
        try await SyncServer.with(.sqlite) { server in
            let a = try await Device.make(
                "a", user: "alice", server: server, directory: directory,
                transport: { ForwardingTransport.slow($0) })
            try a.execute("INSERT INTO note(id, title) VALUES ('n1', 'video')")
            let size = 4 << 20
            let added = try await a.database.attachments.add(data: Self.bytes(size, seed: 4), to: "note", row: "n1")
            let seen = Task {
                var sent: [Int64] = []
                for try await list in a.database.attachments.observe(table: "note", row: "n1") {
                    guard let state = list.first?.state else { continue }
                    if case .uploading(let bytes) = state { sent.append(bytes) }
                    if state == .uploaded { break }
                    if case .failed = state { break }
                }
                return sent
            }
            try await Task.sleep(for: .milliseconds(100))
            try await a.engine.sync()
            let progress = try await seen.value
            #expect(progress.contains { $0 > 0 && $0 < Int64(size) }, "no progress seen between 0 and the size: \(progress)")
            #expect(progress == progress.sorted())
        }
    }

    @Test(arguments: StoreKind.available) func aBlobNoRowRefersToIsCollectedAfterTheTombstoneRetention(_ kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let a = try await Device.make("a", user: "alice", server: server, directory: directory)
            try a.execute("INSERT INTO note(id, title) VALUES ('n1', 'two scans')")
            let kept = try await a.database.attachments.add(data: Self.bytes(50_000, seed: 5), to: "note", row: "n1")
            let removed = try await a.database.attachments.add(data: Self.bytes(60_000, seed: 6), to: "note", row: "n1")
            try await a.engine.sync()
            try await a.database.attachments.remove(removed)
            try await a.engine.sync()
            let future = Date().addingTimeInterval(60)
            func held() async throws -> Set<String> { Set(try await server.blobs.list().map(\.key.sha256)) }
            #expect(try await held() == [kept.sha256, removed.sha256])
            // The tombstone still names the blob: a device behind may still need it.
            #expect(try await BlobGarbageRules.collect(store: server.store, blobs: server.blobs, before: future) == 0)
            // Once the tombstone is collected, so is the blob; a referenced one never is.
            _ = try await server.store.collectGarbage(before: future)
            #expect(try await BlobGarbageRules.collect(store: server.store, blobs: server.blobs, before: future) == 1)
            #expect(try await held() == [kept.sha256])
            // Nor is a blob newer than the cutoff, though no row names it yet (its row is pushed after it).
            let early = try await a.database.attachments.add(data: Self.bytes(70_000, seed: 7), to: "note", row: "n1")
            let transport = HTTPSyncTransport(baseURL: server.baseURL, requestTimeout: .seconds(10))
            let file = directory.url.appending(path: "early")
            try Self.bytes(70_000, seed: 7).write(to: file)
            _ = try await transport.uploadBlob(
                scope: "user:alice", sha256: early.sha256, file: file, offset: 0, size: 70_000,
                token: try await server.token("alice"))
            #expect(try await BlobGarbageRules.collect(store: server.store, blobs: server.blobs, before: Date().addingTimeInterval(-60)) == 0)
            #expect(try await held() == [kept.sha256, early.sha256])
        }
    }

    @Test func aNonMemberCannotReadOrWriteABlob() async throws {
        try await SyncServer.with(.sqlite) { server in
            let a = try await Device.make("a", user: "alice", server: server, directory: directory)
            try a.execute("INSERT INTO note(id, title) VALUES ('n1', 'private')")
            let added = try await a.database.attachments.add(data: Self.bytes(10_000, seed: 3), to: "note", row: "n1")
            try await a.engine.sync()
            let transport = HTTPSyncTransport(baseURL: server.baseURL, requestTimeout: .seconds(10))
            let mallory = try await server.token("mallory")
            let file = directory.url.appending(path: "stolen")
            await #expect { try await transport.downloadBlob(scope: "user:alice", sha256: added.sha256, into: file, token: mallory) } throws: { "\($0)".contains("403") }
            await #expect { try await transport.blobOffset(scope: "user:alice", sha256: added.sha256, token: mallory) } throws: { "\($0)".contains("403") }
            try Data("forged".utf8).write(to: file, options: .atomic)
            await #expect { try await transport.uploadBlob(scope: "user:alice", sha256: added.sha256, file: file, offset: 0, size: 6, token: mallory) } throws: { "\($0)".contains("403") }
        }
    }
}

/// Records each upload's offset and bytes sent; the first is cut after
/// `cutAt` bytes, as a connection lost halfway.
final class UploadCutter: @unchecked Sendable {
    struct Upload: Sendable { var offset: Int64; var sent: Int64 }
    let cutAt: Int
    let directory: URL
    private let lock = NSLock()
    private var recorded: [Upload] = []

    var uploads: [Upload] { lock.withLock { recorded } }

    func record(_ body: (inout [Upload]) -> Bool) -> Bool { lock.withLock { body(&recorded) } }

    init(cutAt: Int, directory: URL) {
        self.cutAt = cutAt
        self.directory = directory
    }
}

extension ForwardingTransport {
    /// Cuts the first upload after `cutter.cutAt` bytes: the request says
    /// the whole size, and the body stops short.
    static func cutting(_ inner: any SyncTransport, _ cutter: UploadCutter) -> ForwardingTransport {
        ForwardingTransport(
            inner,
            onUpload: { reader, size in
                let first = cutter.record { uploads in
                    uploads.append(.init(offset: reader.offset, sent: size - reader.offset))
                    return uploads.count == 1
                }
                guard first else { return reader }
                var head = Data()
                while head.count < cutter.cutAt, let chunk = try reader.next() { head.append(chunk) }
                let truncated = cutter.directory.appending(path: "cut-\(UUID().uuidString)")
                try Data(head.prefix(cutter.cutAt)).write(to: truncated)
                _ = cutter.record {
                    $0[0].sent = Int64(cutter.cutAt); return true
                }
                return try BlobReader(file: truncated, from: reader.offset)
            })
    }

    /// Slows an upload to about 5 MB/s (a pause per 256 KiB), so progress
    /// has time to show.
    static func slow(_ inner: any SyncTransport) -> ForwardingTransport {
        ForwardingTransport(
            inner,
            onUploadProgress: { progress in
                let last = Reported()
                return { sent in
                    // Called by one upload at a time, in order.
                    if sent - last.value >= 256 << 10 {
                        last.value = sent
                        usleep(50_000)
                    }
                    progress(sent)
                }
            })
    }
}
