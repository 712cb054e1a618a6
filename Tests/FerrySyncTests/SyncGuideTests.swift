import Ferry
import FerryAttachmentEncryption
import FerryHTTPClient
@testable import FerryServer
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// The "Syncing with the server" guide (`Ferry.docc/SyncingWithTheServer.md`), run as written against the
/// real server, with a second device making the conflict it resolves.
@Suite struct SyncGuideTests {
    private static func schema() -> FerrySchema {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "note") { t in
                t.primaryKey("id", .text)
                t.column("title", .text).notNull()
                t.column("body", .text)
            }
            try db.create(table: "task") { t in
                t.primaryKey("id", .text)
                t.column("listScope", .text).notNull()
                t.column("done", .boolean).notNull().defaults(to: false)
            }
        }
        return FerrySchema(
            migrator: migrator,
            syncedTables: [
                SyncedTable("note"),
                SyncedTable("task", scope: .column("listScope")),
            ])
    }

    struct SignIn {
        let server: SyncServer
        func freshToken() async throws -> String { try await server.token("alice") }
    }

    @Test func theSyncGuideWorksAsWritten() async throws {
        let directory = try TemporaryDirectory()
        let server = try await SyncServer.start(tables: ServerTables(rules: ["note": TableRule(policy: .manual)]))
        try await server.stopping {
            try await server.store.createScope("list:groceries", owner: "alice")
            let signIn = SignIn(server: server)
            let token = try await signIn.freshToken()
            let database = try FerryDatabase(path: directory.path("app.sqlite"), schema: Self.schema())
            let serverURL = server.baseURL

            // Another device edits the same note, so there is a conflict to resolve.
            let other = try FerryDatabase(path: directory.path("other.sqlite"), schema: Self.schema())
            let otherEngine = try SyncEngine(
                database: other, transport: HTTPSyncTransport(baseURL: serverURL),
                configuration: SyncConfiguration(userID: "alice"), token: token)
            try await other.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES ('n1', 'milk')") }
            try await otherEngine.sync()

            // --- the guide ---
            let engine = try SyncEngine(
                database: database,
                transport: HTTPSyncTransport(baseURL: serverURL),
                configuration: SyncConfiguration(userID: "alice", sharedScopes: ["list:groceries"]),
                token: token,
                tokenRefresher: { try await signIn.freshToken() })

            var summary = try await engine.sync()
            print("pushed \(summary.pushed), pulled \(summary.pulled), conflicts \(summary.conflicts)")
            #expect(summary.pulled == 1)

            // Both edit the title offline; the other device is first.
            try await database.write { db in try db.execute(sql: "UPDATE note SET title = 'eggs' WHERE id = 'n1'") }
            try await other.write { db in try db.execute(sql: "UPDATE note SET title = 'bread' WHERE id = 'n1'") }
            try await otherEngine.sync()
            summary = try await engine.sync()
            #expect(summary.conflicts == 1)

            await engine.start()
            let statuses = Task {
                for await status in engine.statusUpdates() {
                    print(status.phase, status.pendingCount, status.conflictCount, status.lastError ?? "no error")
                    if status.conflictCount == 0 && status.pendingCount == 0 && status.phase == .idle && status.pushed > 0 { break }
                }
            }
            let seen = Task {
                for try await conflicts in database.conflicts.observe() {
                    for conflict in conflicts {
                        print(
                            conflict.table, conflict.rowID, conflict.column ?? "the row",
                            "base:", conflict.base ?? .null, "mine:", conflict.mine ?? .null, "theirs:", conflict.theirs ?? .null)
                    }
                    if conflicts.isEmpty { return }
                }
            }

            let conflict = try #require(try database.conflicts.list().first)
            #expect(conflict.mine == "eggs" && conflict.theirs == "bread" && conflict.resolution == .unresolved)
            if let conflict = try database.conflicts.list().first {
                try database.conflicts.resolve(conflict, with: .mine)
            }

            for rejected in try database.outbox.rejectedMutations() {
                print(rejected.table, rejected.rowID, rejected.reason)
                try database.outbox.discard(rejected)
            }
            // --- end of the guide ---

            try await seen.value
            await statuses.value
            await engine.stop()
            try await otherEngine.sync()
            let title = try await other.read { db in try String.fetchOne(db, sql: "SELECT title FROM note WHERE id = 'n1'") }
            #expect(title == "eggs")
        }
    }
    /// "Conflicts: what is recorded where", as written: a notice for an
    /// applied value another device deleted, resolved as "mine" on a device
    /// that no longer holds the row; a rejected edit discarded back to the
    /// server's row; a row set aside.
    @Test func theConflictSectionWorksAsWritten() async throws {
        let directory = try TemporaryDirectory()
        let noMilk = MutationValidator { $0.mutation.columns["title"] == .text("milk") ? .reject(reason: "no milk") : .accept }
        try await SyncServer.with(.sqlite, tables: ServerTables(rules: ["note": TableRule(policy: .serverWins, validator: noMilk)])) { server in
            let token = try await server.token("alice")
            func device(_ name: String) throws -> (FerryDatabase, SyncEngine) {
                let database = try FerryDatabase(path: directory.path("\(name).sqlite"), schema: Self.schema())
                let engine = try SyncEngine(
                    database: database, transport: HTTPSyncTransport(baseURL: server.baseURL),
                    configuration: SyncConfiguration(userID: "alice"), token: token)
                return (database, engine)
            }
            let (database, engine) = try device("app")
            let (other, otherEngine) = try device("other")
            try await database.write { db in try db.execute(sql: "INSERT INTO note(id, title, body) VALUES ('n1', 'eggs', 'a dozen')") }
            try await engine.sync()
            try await otherEngine.sync()
            try await database.write { db in try db.execute(sql: "UPDATE note SET body = 'two dozen' WHERE id = 'n1'") }
            try await engine.sync()
            try await other.write { db in try db.execute(sql: "DELETE FROM note") }
            try await otherEngine.sync()
            try await engine.sync()
            #expect(try await database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM note") } == 0)

            // --- the guide ---
            for conflict in try database.conflicts.list() {
                if let other = conflict.overriddenBy {
                    print("\(other) discarded your \(conflict.column ?? "row") \(conflict.mine ?? .null)")
                }
                try database.conflicts.resolve(conflict, with: .mine)  // or .theirs, or .merged(["title": "milk, eggs"])
            }
            // --- end of the guide ---
            try await engine.sync()
            try await otherEngine.sync()
            let row = try await other.read { db in try Row.fetchOne(db, sql: "SELECT title, body FROM note WHERE id = 'n1'") }
            #expect(row?["title"] == "eggs" && row?["body"] == "two dozen")

            try await database.write { db in try db.execute(sql: "UPDATE note SET title = 'milk' WHERE id = 'n1'") }
            try await engine.sync()
            #expect(try database.outbox.rejectedMutations().count == 1)
            // --- the guide ---
            for rejected in try database.outbox.rejectedMutations() {
                print(rejected.table, rejected.rowID, rejected.reason)
                try database.outbox.discard(rejected)  // or fix the row, then .resend(rejected)
            }
            // --- end of the guide ---
            #expect(try await database.read { db in try String.fetchOne(db, sql: "SELECT title FROM note WHERE id = 'n1'") } == "eggs")

            // A server row this schema cannot hold (NOT NULL title) is set aside.
            _ = try await server.store.push(
                PushRequest(
                    clientID: "script",
                    mutations: [
                        Mutation(
                            mutationID: 1, table: "note", rowID: "n2", scope: "user:alice", operation: .upsert,
                            columns: ["title": .null], baseVersion: nil, hlc: HLCTimestamp(wallMilliseconds: 1, counter: 0))
                    ]), userID: "alice", rules: PushRules())
            try await engine.sync()
            // --- the guide ---
            for row in try database.setAsideRows.list() {
                print(row.table, row.rowID, row.reason)
            }
            // --- end of the guide ---
            #expect(try database.setAsideRows.list().map(\.rowID) == ["n2"])
        }
    }
}

/// The "Attaching files" guide (`Ferry.docc/AttachingFiles.md`), as written, with two devices.
@Suite struct AttachmentsGuideTests {
    @Test func theAttachmentsGuideWorksAsWritten() async throws {
        try await SyncServer.with(.sqlite) { server in
            let directory = try TemporaryDirectory()
            let schema = SyncSchema.schema()
            let cameraURL = directory.url.appending(path: "IMG_0001.jpg")
            let photoBytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            try photoBytes.write(to: cameraURL)
            func engine(for database: FerryDatabase) async throws -> SyncEngine {
                try SyncEngine(
                    database: database, transport: HTTPSyncTransport(baseURL: server.baseURL),
                    configuration: SyncConfiguration(userID: "alice"), token: try await server.token("alice"))
            }
            var listOnB: [Ferry.Attachment] = []
            var bytesOnB = Data()
            for device in ["a", "b"] {
                let path = directory.path("\(device).sqlite")
                var configuration = FerryConfiguration()
                configuration.attachmentsDirectory = directory.url.appending(path: "\(device)-files")
                // --- the guide ---
                configuration.attachmentDownloads = ["note": .eager]  // the default is on first open
                configuration.attachmentCacheLimit = 500_000_000  // bytes of downloads kept; nil: no limit
                let database = try FerryDatabase(path: path, schema: schema, configuration: configuration)
                let engine = try await engine(for: database)
                if device == "a" {
                    try await database.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES ('n1', 'with a photo')") }
                    let photo = try await database.attachments.add(file: cameraURL, to: "note", row: "n1", contentType: "image/jpeg")
                    try await engine.sync()  // photo.state: .localOnly → .uploading(sent:) → .uploaded
                    #expect(try database.attachments.attachment(id: photo.id)?.state == .uploaded)
                } else {
                    try await engine.sync()
                    // On another device, after its sync:
                    let list = try database.attachments.list(table: "note", row: "n1")
                    let url = try await engine.open(list[0])  // local, or downloaded and verified first
                    let bytes = try database.attachments.data(for: list[0])  // read whole, checked against its hash
                    // --- end of the guide ---
                    #expect(try Data(contentsOf: url) == photoBytes)
                    listOnB = list
                    bytesOnB = bytes
                }
            }
            #expect(listOnB.map(\.name) == ["IMG_0001.jpg"] && listOnB.first?.contentType == "image/jpeg")
            #expect(bytesOnB == photoBytes)
        }
    }

    @Test func theAttachmentEncryptionGuideWorksAsWritten() async throws {
        try await SyncServer.with(.sqlite) { server in
            let directory = try TemporaryDirectory()
            let previewURL = directory.url.appending(path: "preview.pdf")
            let scanBytes = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 11) })
            var scanOnB: Ferry.Attachment?
            for device in ["a", "b"] {
                var configuration = FerryConfiguration()
                configuration.attachmentsDirectory = directory.url.appending(path: "\(device)-files")
                // --- the guide ---
                struct KeychainAttachmentKey: AttachmentKeyProvider {
                    func attachmentKey() throws -> Data { try keychain.load("ferry.attachments.key") }  // 32 bytes
                }
                configuration.attachmentCipher = try AESGCMAttachmentCipher(keyProvider: KeychainAttachmentKey())
                // --- the guide, paused ---
                let database = try FerryDatabase(
                    path: directory.path("\(device).sqlite"), schema: SyncSchema.schema(),
                    configuration: configuration)
                let engine = try SyncEngine(
                    database: database, transport: HTTPSyncTransport(baseURL: server.baseURL),
                    configuration: SyncConfiguration(userID: "alice"), token: try await server.token("alice"))
                if device == "a" {
                    try await database.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES ('n1', 'scan')") }
                    try await database.attachments.add(data: scanBytes, to: "note", row: "n1", name: "scan.pdf")
                    try await engine.sync()
                    continue
                }
                try await engine.sync()
                let scan = try #require(try database.attachments.list(table: "note", row: "n1").first)
                // --- the guide, again ---
                try await engine.fetch(scan)  // downloaded, verified and sealed, if not here
                let pdf = try database.attachments.data(for: scan)  // opened chunk by chunk, checked
                try database.attachments.export(scan, to: previewURL)  // a plain copy; remove it when done
                // --- end of the guide ---
                #expect(pdf == scanBytes)
                scanOnB = scan
            }
            #expect(try Data(contentsOf: previewURL) == scanBytes)
            #expect(scanOnB?.name == "scan.pdf")
        }
    }
}

/// Stands in for the Keychain in the guide's example.
private let keychain = Keychain()

private struct Keychain: Sendable {
    func load(_ name: String) throws -> Data { Data(repeating: 42, count: 32) }
}
