@testable import Ferry
import FerryTesting
import FerryAttachmentEncryption
import FerryHTTPClient
import FerryTestSupport
import Foundation
import Testing

/// Attachment files sealed at rest, synced: the server holds the plain
/// bytes (its hash names them), each device seals them with its own key,
/// and a sealed download cut halfway continues with a `Range` request from
/// the chunks it kept, through either transport.
@Suite struct AttachmentEncryptionSyncTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    @Test(arguments: TransportParityTests.Kind.allCases)
    func sealedAttachmentsSyncAndResumeThroughEitherTransport(_ kind: TransportParityTests.Kind) async throws {
        try await SyncServer.with(.sqlite) { server in
            let a = try await Device.make(
                "a", user: "alice", server: server, directory: directory,
                configureDatabase: { $0.attachmentCipher = try? AESGCMAttachmentCipher(key: Data(repeating: 1, count: 32)) },
                transport: { _ in kind.make(server.baseURL) })
            let recorder = BlobRecorder()
            let b = try await Device.make(
                "b", user: "alice", server: server, directory: directory,
                configureDatabase: { $0.attachmentCipher = try? AESGCMAttachmentCipher(key: Data(repeating: 2, count: 32)) },
                transport: { _ in ForwardingTransport.recording(kind.make(server.baseURL), recorder) })
            try a.execute("INSERT INTO note(id, title) VALUES ('n1', 'a scan')")
            // Past one 4 MiB window of the URLSession transport, and not a whole number of chunks.
            let scan = AttachmentSyncTests.bytes(5 << 20 + 77, seed: 21)
            let added = try await a.database.attachments.add(data: scan, to: "note", row: "n1", name: "scan.pdf")
            let onA = directory.url.appending(path: "a-files/attachments/note/n1/\(added.id)")
            #expect(try Data(contentsOf: onA).range(of: scan.prefix(64)) == nil)
            let pushed = try await a.engine.sync()
            #expect(pushed.attachmentsUploaded == 1 && pushed.attachmentTransfersFailed == 0)

            // The server holds the plain bytes.
            let plain = directory.url.appending(path: "server-copy")
            try await HTTPSyncTransport(baseURL: server.baseURL, requestTimeout: .seconds(10))
                .downloadBlob(scope: "user:alice", sha256: added.sha256, into: plain, token: try await server.token("alice"))
            #expect(try Data(contentsOf: plain) == scan)

            // B learns of it, holds 2,000,000 of its bytes from a download cut short, and continues.
            try await b.engine.sync()
            let onB = try #require(try b.database.attachments.list(table: "note", row: "n1").first)
            #expect(onB.state == .missing)
            let files = try b.database.attachments.files()
            try FileManager.default.createDirectory(at: files.temp, withIntermediateDirectories: true)
            let partial = try files.writer(appendingTo: files.temp.appending(path: onB.id))
            try partial.write(scan.prefix(2_000_000))
            try partial.flush()
            partial.close()
            try await b.engine.fetch(onB)
            // Whole sealed chunks were kept (the chunk not yet sealed is fetched again).
            #expect(recorder.downloads == [30 * 65_536])
            #expect(try b.database.attachments.data(for: onB) == scan)
            let sealedOnB = try Data(contentsOf: directory.url.appending(path: "b-files/attachments/note/n1/\(onB.id)"))
            #expect(Int64(sealedOnB.count) == SealedFileLayout(overhead: 28).storedSize(plain: Int64(scan.count)))
            #expect(sealedOnB.range(of: scan.prefix(64)) == nil)
            await #expect(throws: FerryError.self) { try await b.engine.open(onB) }
        }
    }
}
