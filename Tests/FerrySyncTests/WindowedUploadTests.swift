@testable import Ferry
import FerryProtocol
import FerryServer
import FerryTestSupport
import Foundation
import Testing

/// A blob sent in windows (the URLSession transport's 4 MiB `PUT`s) is
/// hashed once on the server: each window resumes the hash saved with the
/// bytes before it, so no held byte is read back. A hash that is missing
/// (an upload an older build began) is caught up from the bytes held, and
/// only those.
@Suite(.postgresTurns) struct WindowedUploadTests {
    @Test(arguments: StoreKind.available) func aWindowedUploadReadsNoHeldByteBack(_ kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let directory = try TemporaryDirectory()
            let transport = URLSessionSyncTransport(baseURL: server.baseURL, requestTimeout: .seconds(30))
            let token = try await server.token("alice")
            let bytes = AttachmentSyncTests.bytes(64 << 20, seed: 34)
            var digest = SHA256Digest()
            digest.update(bytes)
            let sha256 = digest.finalize()
            let file = directory.url.appending(path: "blob")
            try bytes.write(to: file)

            let windows = Windows()
            let held = try await transport.uploadBlob(
                scope: "user:alice", sha256: sha256, file: file, size: Int64(bytes.count), token: token,
                progress: { windows.add($0) })
            #expect(held == Int64(bytes.count))
            #expect(windows.count == 16, "64 MiB in 4 MiB windows")
            #expect(server.blobs.bytesRehashed == 0, "no held byte read back: \(server.blobs.bytesRehashed)")
            #expect(try await server.blobs.state(of: BlobKey(scope: "user:alice", sha256: sha256)) == .complete(size: Int64(bytes.count)))
            var read = Data()
            for try await chunk in try await server.blobs.read(BlobKey(scope: "user:alice", sha256: sha256), range: 0..<Int64(bytes.count)) {
                read.append(contentsOf: chunk.readableBytesView)
            }
            #expect(read == bytes)
            let metrics = try await server.metricsText()
            #expect(metrics.contains("ferry_blob_upload_rehashed_bytes 0"), "\(metrics.prefix(2000))")
        }
    }

    @Test(arguments: StoreKind.available) func aMissingSavedHashIsCaughtUpFromTheHeldBytesOnly(_ kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let directory = try TemporaryDirectory()
            let transport = URLSessionSyncTransport(baseURL: server.baseURL, requestTimeout: .seconds(30))
            let token = try await server.token("alice")
            let bytes = AttachmentSyncTests.bytes(12 << 20 + 3, seed: 35)
            var digest = SHA256Digest()
            digest.update(bytes)
            let sha256 = digest.finalize()
            // Two windows' worth first (the file ends there), then the hash saved with them is lost.
            let head = directory.url.appending(path: "head")
            try bytes.prefix(8 << 20).write(to: head)
            let first = try await transport.uploadBlob(scope: "user:alice", sha256: sha256, file: head, size: Int64(bytes.count), token: token)
            #expect(first == 8 << 20)
            switch kind {
            case .sqlite:
                let hashes = try #require(FileManager.default.enumerator(at: server.directory.url, includingPropertiesForKeys: nil))
                    .compactMap { $0 as? URL }.filter { $0.lastPathComponent == sha256 + ".hash" }
                #expect(hashes.count == 1)
                for hash in hashes { try FileManager.default.removeItem(at: hash) }
            case .postgres:
                try await #require(server.postgres).execute("UPDATE ferry_blobs SET hash_state = NULL")
            }
            let file = directory.url.appending(path: "blob")
            try bytes.write(to: file)
            let held = try await transport.uploadBlob(
                scope: "user:alice", sha256: sha256, file: file, offset: first, size: Int64(bytes.count), token: token)
            #expect(held == Int64(bytes.count))
            #expect(server.blobs.bytesRehashed == 8 << 20, "exactly the held bytes: \(server.blobs.bytesRehashed)")
            #expect(try await server.blobs.state(of: BlobKey(scope: "user:alice", sha256: sha256)) == .complete(size: Int64(bytes.count)))
        }
    }

    // @unchecked: `offsets` is only touched under `lock`.
    final class Windows: @unchecked Sendable {
        private let lock = NSLock()
        private var offsets: [Int64] = []
        func add(_ offset: Int64) { lock.withLock { offsets.append(offset) } }
        var count: Int { lock.withLock { offsets.count } }
    }
}
