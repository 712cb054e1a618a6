@testable import Ferry
import FerryAttachmentEncryption
import FerryTestSupport
import Foundation
import GRDB
import Testing

/// Attachment files sealed at rest with AES-GCM: the layout's arithmetic,
/// the bytes round-tripping at every chunk boundary, and every way of
/// tampering with a file refused, its bytes never returned.
@Suite struct AttachmentEncryptionTests {
    struct FixedKey: AttachmentKeyProvider {
        var key = Data(repeating: 7, count: 32)
        func attachmentKey() throws -> Data { key }
    }

    static let sizes = [0, 1, 65_535, 65_536, 65_537, 3 * 65_536, 200_000]

    @Test func theLayoutMapsPlainSizesToStoredSizesAndBack() {
        let layout = SealedFileLayout(overhead: 28)
        #expect(layout.storedSize(plain: 0) == 29 + 28)
        #expect(layout.storedSize(plain: 65_536) == 29 + 65_536 + 28)
        #expect(layout.storedSize(plain: 65_537) == 29 + 65_537 + 2 * 28)
        for plain in Self.sizes.map(Int64.init) + [1 << 30] {
            #expect(layout.plainSize(stored: layout.storedSize(plain: plain)) == plain)
        }
        // No complete file has a size inside a chunk's overhead.
        #expect(layout.plainSize(stored: 29 + 10) == nil)
        #expect(layout.plainSize(stored: 29 + 65_564 + 5) == nil)
        // An empty last chunk after a full one is no file's.
        #expect(layout.plainSize(stored: 29 + 65_564 + 28) == nil)
    }

    @Test func theCipherRefusesABadKey() {
        #expect(throws: FerryError.self) { try AESGCMAttachmentCipher(key: Data(count: 16)) }
        struct Failing: AttachmentKeyProvider {
            func attachmentKey() throws -> Data { throw CocoaError(.fileReadNoPermission) }
        }
        let error = #expect(throws: FerryError.self) { try AESGCMAttachmentCipher(keyProvider: Failing()) }
        #expect(error?.code == .invalidEncryptionKey)
    }

    @Test(arguments: sizes)
    func sealedAttachmentsRoundTripAndHoldNoPlaintext(size: Int) async throws {
        let fixture = try await Fixture()
        let bytes = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 11) })
        let attachment = try await fixture.database.attachments.add(data: bytes, to: "item", row: "r1")
        #expect(attachment.size == Int64(size))
        let file = fixture.file(of: attachment)
        let stored = try Data(contentsOf: file)
        #expect(Int64(stored.count) == SealedFileLayout(overhead: 28).storedSize(plain: Int64(size)))
        if size >= 64 { #expect(stored.range(of: bytes.prefix(64)) == nil) }
        #expect(try fixture.database.attachments.data(for: attachment) == bytes)
        let copy = fixture.directory.url.appending(path: "copy")
        try fixture.database.attachments.export(attachment, to: copy)
        #expect(try Data(contentsOf: copy) == bytes)
        // A sealed file has no readable URL to hand out.
        let error = #expect(throws: FerryError.self) { try fixture.database.attachments.localURL(for: attachment) }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test func aLargeFileIsSealedAsItStreamsAndReadsBackFromAnyOffset() async throws {
        let fixture = try await Fixture()
        let source = fixture.directory.url.appending(path: "source")
        let bytes = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try bytes.write(to: source)
        let attachment = try await fixture.database.attachments.add(file: source, to: "item", row: "r1")
        let files = try fixture.database.attachments.files()
        for offset in [0, 1, 65_535, 65_536, 65_537, 2_999_999, 3_000_000] {
            let reader = try files.reader(fixture.file(of: attachment), from: Int64(offset))
            var read = Data()
            while let chunk = try reader.next() { read.append(chunk) }
            #expect(read == bytes.dropFirst(offset), "from \(offset)")
        }
    }

    enum Tamper: String, CaseIterable, Sendable {
        case flipAByteInTheMiddle, flipAByteOfTheHeader, cutAtAChunkBoundary, cutInsideAChunk, appendGarbage,
            swapTwoChunks, dropTheLastChunk, useAnotherFilesChunk, keepOnlyTheHeader
    }

    @Test(arguments: Tamper.allCases)
    func aTamperedFileIsRefusedAndNeverReturned(tamper: Tamper) async throws {
        let fixture = try await Fixture()
        let bytes = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        let attachment = try await fixture.database.attachments.add(data: bytes, to: "item", row: "r1")
        let other = try await fixture.database.attachments.add(data: bytes, to: "item", row: "r1")
        let file = fixture.file(of: attachment)
        var stored = try Data(contentsOf: file)
        let header = SealedFileLayout.headerSize, chunk = 65_536 + 28
        switch tamper {
        case .flipAByteInTheMiddle: stored[100_000] ^= 1
        case .flipAByteOfTheHeader: stored[20] ^= 1
        case .cutAtAChunkBoundary: stored = stored.prefix(header + 2 * chunk)
        case .cutInsideAChunk: stored = stored.prefix(header + chunk + 1000)
        case .appendGarbage: stored.append(Data(repeating: 0, count: 100))
        case .swapTwoChunks:
            let first = stored[header..<header + chunk], second = stored[header + chunk..<header + 2 * chunk]
            stored.replaceSubrange(header..<header + 2 * chunk, with: second + first)
        case .dropTheLastChunk: stored = stored.prefix(header + 3 * chunk)
        case .keepOnlyTheHeader: stored = stored.prefix(header)
        case .useAnotherFilesChunk:
            let foreign = try Data(contentsOf: fixture.file(of: other))
            stored.replaceSubrange(header..<header + chunk, with: foreign[header..<header + chunk])
        }
        try stored.write(to: file)
        #expect(throws: FerryError.self) { try fixture.database.attachments.data(for: attachment) }
        let copy = fixture.directory.url.appending(path: "copy")
        #expect(throws: FerryError.self) { try fixture.database.attachments.export(attachment, to: copy) }
        #expect(!FileManager.default.fileExists(atPath: copy.path))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.url.path)
        #expect(!leftovers.contains { $0.hasSuffix("ferry-partial") })
        // Reading it chunk by chunk never yields a byte that is not the original's.
        var yielded = Data()
        do {
            let reader = try fixture.database.attachments.files().reader(file)
            while let chunk = try reader.next() { yielded.append(chunk) }
            Issue.record("reading a tampered file ended without an error")
        } catch {
            #expect((error as? FerryError)?.code == .attachmentCorrupted)
        }
        #expect(bytes.starts(with: yielded))
    }

    @Test func anInterruptedSealedWriteContinuesFromItsWholeChunks() async throws {
        let fixture = try await Fixture()
        let files = try fixture.database.attachments.files()
        let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 3) })
        let partial = fixture.directory.url.appending(path: "partial")
        var writer = try files.writer(appendingTo: partial)
        try writer.write(bytes.prefix(150_000))
        try writer.flush()
        writer.close()
        // Two whole chunks were sealed; the one after them stayed in memory and is lost, the
        // last whole one is read back (it may have been the last of a finished file).
        writer = try files.writer(appendingTo: partial)
        #expect(writer.held == 131_072)
        try writer.write(bytes.dropFirst(Int(writer.held)))
        try writer.finish()
        #expect(try files.digest(of: partial).size == 300_000)
        let reader = try files.reader(partial)
        var read = Data()
        while let chunk = try reader.next() { read.append(chunk) }
        #expect(read == bytes)
        // A finished file reopened holds all its bytes and can be finished again unchanged.
        writer = try files.writer(appendingTo: partial)
        #expect(writer.held == 300_000)
        try writer.finish()
        #expect(try files.digest(of: partial).size == 300_000)
        // A torn chunk (a crash mid-write) is dropped.
        let handle = try FileHandle(forUpdating: partial)
        try handle.truncate(atOffset: UInt64(SealedFileLayout.headerSize + 65_564 + 100))
        try handle.close()
        writer = try files.writer(appendingTo: partial)
        #expect(writer.held == 65_536)
        writer.close()
    }

    @Test func aDirectoryIsOpenedOnlyInTheFormItsFilesWereWrittenIn() async throws {
        let fixture = try await Fixture()
        _ = try await fixture.database.attachments.add(data: Data("sealed".utf8), to: "item", row: "r1")
        var plain = FerryConfiguration()
        plain.attachmentsDirectory = fixture.files
        let reopened = try FerryDatabase(path: fixture.directory.path("other.sqlite"), schema: ItemSchema.schema, configuration: plain)
        try await reopened.write { db in try db.execute(sql: "INSERT INTO item(id, writer, revision) VALUES ('r1', 'me', 0)") }
        let error = await #expect(throws: FerryError.self) {
            try await reopened.attachments.add(data: Data("plain".utf8), to: "item", row: "r1")
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("sealed") == true)
        // Another key is caught before any file is read.
        var otherKey = FerryConfiguration()
        otherKey.attachmentsDirectory = fixture.files
        otherKey.attachmentCipher = try AESGCMAttachmentCipher(key: Data(repeating: 8, count: 32))
        let wrongKey = try FerryDatabase(path: fixture.directory.path("third.sqlite"), schema: ItemSchema.schema, configuration: otherKey)
        let refused = #expect(throws: FerryError.self) { try wrongKey.attachments.files() }
        #expect(refused?.message.contains("another key") == true)
    }

    /// A database whose attachment files are sealed, with a row to attach to.
    struct Fixture {
        let directory: TemporaryDirectory
        let files: URL
        let database: FerryDatabase

        init() async throws {
            directory = try TemporaryDirectory()
            files = directory.url.appending(path: "files")
            var configuration = FerryConfiguration()
            configuration.attachmentsDirectory = files
            configuration.attachmentCipher = try AESGCMAttachmentCipher(keyProvider: FixedKey())
            database = try FerryDatabase(path: directory.path("notes.sqlite"), schema: ItemSchema.schema, configuration: configuration)
            try await database.write { db in try db.execute(sql: "INSERT INTO item(id, writer, revision) VALUES ('r1', 'me', 0)") }
        }

        func file(of attachment: Ferry.Attachment) -> URL {
            files.appending(path: "attachments/item/r1/\(attachment.id)")
        }
    }
}
