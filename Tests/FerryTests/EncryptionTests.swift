import Ferry
import Foundation
import GRDB
import Testing
import FerryTestSupport

@Suite struct EncryptionTests {
    struct KeyFromEnvironment: DatabaseKeyProvider {
        var key: DatabaseKey
        func databaseKey() throws -> DatabaseKey { key }
    }

    struct FailingProvider: DatabaseKeyProvider {
        struct Locked: Error {}
        func databaseKey() throws -> DatabaseKey { throw Locked() }
    }

    static let linkedSQLiteHasCodec: Bool = {
        (try? DatabaseQueue().read { db in try String.fetchOne(db, sql: "PRAGMA cipher_version") }) != nil
    }()

    @Test(arguments: [DatabaseKey.passphrase("correct horse battery staple"), .raw(Data(repeating: 7, count: 32))])
    func aKeyIsAppliedOrOpeningFailsLoudly(key: DatabaseKey) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("secret.sqlite")
        var configuration = FerryConfiguration()
        configuration.encryption = KeyFromEnvironment(key: key)
        if Self.linkedSQLiteHasCodec {
            let database = try FerryDatabase(path: path, schema: NotesAndTasks.schema, configuration: configuration)
            try database.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES ('n', 'secret')") }
            try database.checkpoint()
            let header = try Data(contentsOf: URL(fileURLWithPath: path)).prefix(16)
            #expect(header != Data("SQLite format 3\0".utf8))
        } else {
            let error = #expect(throws: FerryError.self) {
                try FerryDatabase(path: path, schema: NotesAndTasks.schema, configuration: configuration)
            }
            #expect(error?.code == .encryptionUnavailable)
            #expect(error?.message.contains("has no codec") == true)
            // Nothing was written in clear text.
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    @Test func unusableKeysAreRefusedBeforeOpening() throws {
        let directory = try TemporaryDirectory()
        var configuration = FerryConfiguration()
        configuration.encryption = KeyFromEnvironment(key: .raw(Data([1, 2, 3])))
        let short = #expect(throws: FerryError.self) {
            try FerryDatabase(path: directory.path("a.sqlite"), schema: NotesAndTasks.schema, configuration: configuration)
        }
        #expect(short?.code == .invalidEncryptionKey)
        configuration.encryption = FailingProvider()
        let failing = #expect(throws: FerryError.self) {
            try FerryDatabase(path: directory.path("b.sqlite"), schema: NotesAndTasks.schema, configuration: configuration)
        }
        #expect(failing?.code == .invalidEncryptionKey)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }

    @Test func anAlreadyOpenWriterCannotBeEncryptedSilently() throws {
        var configuration = FerryConfiguration()
        configuration.encryption = KeyFromEnvironment(key: .passphrase("secret"))
        let error = #expect(throws: FerryError.self) {
            try FerryDatabase(writer: DatabaseQueue(), schema: NotesAndTasks.schema, configuration: configuration)
        }
        #expect(error?.code == .invalidConfiguration)
    }
}
