@testable import Ferry
@testable import FerryServer
import FerryHTTPClient
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// A full disk, on the device and on the server. The write that does not fit
/// fails with a clear error and changes nothing; everything committed before
/// it stays; sync picks up where it was once space returns.
///
/// The disk is filled with SQLite's `max_page_count` on the one writer
/// connection: the file cannot grow past its cap, exactly as when the disk
/// has no room (SQLite answers both with `SQLITE_FULL`).
@Suite struct DiskFullTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    /// Lets the file grow by at most `sparePages` more pages, or lifts the
    /// cap (`nil`). The pool's writes all go through its one writer
    /// connection, which keeps the setting.
    static func capFile(_ writer: any DatabaseWriter, sparePages: Int?) throws {
        try writer.writeWithoutTransaction { db in
            let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            let cap = sparePages.map { pages + $0 } ?? 1 << 30
            try db.execute(sql: "PRAGMA max_page_count = \(cap)")
            #expect(try Int.fetchOne(db, sql: "PRAGMA max_page_count") == cap)
        }
    }

    static func integrity(_ writer: any DatabaseReader) throws -> String? {
        try writer.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") }
    }

    static let page = String(repeating: "x", count: 8192)

    @Test func aDeviceWithAFullDiskRefusesTheWriteKeepsWhatItHadAndSyncsOnceSpaceReturns() async throws {
        try await Self.deviceFillsUp(
            in: directory, otherIn: directory,
            fill: { try Self.capFile($0.database.writer, sparePages: 2) },
            free: { try Self.capFile($0.database.writer, sparePages: nil) })
    }

    /// A device whose disk `fill` fills (given the device) and `free` frees:
    /// a write that does not fit throws `storageFull` and changes nothing, a
    /// sync that cannot store its pull throws the same, and once space
    /// returns the next sync converges with every change stored once.
    static func deviceFillsUp(
        in phoneDirectory: TemporaryDirectory, otherIn otherDirectory: TemporaryDirectory,
        fill: (Device) throws -> Void, free: (Device) throws -> Void
    ) async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let phone = try await Device.make("phone", user: "alice", server: server, directory: phoneDirectory)
            let other = try await Device.make("other", user: "alice", server: server, directory: otherDirectory)
            for index in 0..<20 {
                try phone.execute("INSERT INTO note(id, title) VALUES (?, ?)", ["n\(index)", "synced \(index)"])
            }
            _ = try await phone.engine.sync()
            for index in 20..<25 {
                try phone.execute("INSERT INTO note(id, title) VALUES (?, ?)", ["n\(index)", "pending \(index)"])
            }
            let before = try phone.notes()

            // A write that needs more room than is left fails whole, with a FerryError.
            try fill(phone)
            let refused = await #expect(throws: FerryError.self) {
                try await phone.database.write { db in
                    for index in 0..<100 {
                        try db.execute(sql: "INSERT INTO note(id, title, body) VALUES (?, 'big', ?)", arguments: ["big\(index)", Self.page])
                    }
                }
            }
            #expect(refused?.code == .storageFull, "\(String(describing: refused))")
            #expect(refused?.message.contains("no space left") == true)
            #expect(try integrity(phone.database.writer) == "ok")
            #expect(try phone.notes() == before)
            #expect(try phone.database.outbox.pendingCount() == 5)

            // The other device writes more than fits: the pull cannot store it.
            for index in 0..<100 {
                try other.execute("INSERT INTO note(id, title, body) VALUES (?, 'remote', ?)", ["r\(index)", Self.page])
            }
            _ = try await other.engine.sync()
            let pullRefused = await #expect(throws: FerryError.self) { try await phone.engine.sync() }
            #expect(pullRefused?.code == .storageFull, "\(String(describing: pullRefused))")
            // The push went first and was recorded: what could not be stored is the pull,
            // and no pulled row was set aside as if it were bad.
            #expect(try phone.database.outbox.pendingCount() == 0)
            #expect(try await phone.database.read { db in try SetAsideRecord.fetchCount(db) } == 0)
            #expect(try integrity(phone.database.writer) == "ok")
            let kept = try phone.notes()
            #expect(before.allSatisfy { kept[$0.key] == $0.value }, "a committed note was lost")
            #expect(kept.keys.filter { $0.hasPrefix("r") }.count < 100, "the disk did not fill")

            // Room again: the sync resumes, nothing lost and nothing twice.
            try free(phone)
            _ = try await phone.engine.sync()
            _ = try await other.engine.sync()
            let everything = try phone.notes()
            #expect(everything.count == 125)
            #expect(try other.notes() == everything)
            #expect(try await server.rows("note", in: "user:alice").count == 125)
            #expect(try await server.storeVersion() == 125)
            #expect(try phone.database.outbox.pendingCount() == 0)
            #expect(try integrity(phone.database.writer) == "ok")
        }
    }

    @Test func aServerWithAFullDiskAnswers503AndChangesNothingThenTakesThePushOnceSpaceReturns() async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let store = try #require(server.sqlite)
            let device = try await Device.make(
                "a", user: "alice", server: server, directory: directory,
                configure: { $0.retry.attemptsPerSync = 2 })
            try device.execute("INSERT INTO note(id, title) VALUES ('first', 'fits')")
            _ = try await device.engine.sync()
            for index in 0..<30 {
                try device.execute("INSERT INTO note(id, title, body) VALUES (?, 'big', ?)", ["n\(index)", Self.page])
            }
            try Self.capFile(store.pool, sparePages: 0)
            let before = try SQLiteDump.lines(store.pool)

            // On the wire: 503 with the store's reason, nothing stored.
            let transport = HTTPSyncTransport(baseURL: server.baseURL)
            let mutations = (1...30).map { index in
                Mutation(
                    mutationID: Int64(index), table: "note", rowID: "raw\(index)", scope: "user:alice", operation: .upsert,
                    columns: ["title": .text("raw"), "body": .text(Self.page)], baseVersion: nil,
                    hlc: HLCTimestamp(wallMilliseconds: 1_700_000_000_000, counter: UInt16(index)))
            }
            let request = PushRequest(clientID: "raw-client", mutations: mutations)
            do {
                _ = try await transport.push(request, token: server.token("alice"))
                Issue.record("a push the store cannot hold was accepted")
            } catch SyncTransportError.http(let status, let body, _) {
                #expect(status == 503)
                #expect(body?.code == .unavailable)
                #expect(body?.message.contains("no space left") == true)
            }
            #expect(try SQLiteDump.lines(store.pool) == before)

            // Through the engine: the sync gives up as on any outage and keeps the outbox.
            let gaveUp = await #expect(throws: FerryError.self) { try await device.engine.sync() }
            #expect(gaveUp?.code == .serverUnavailable)
            #expect(try SQLiteDump.lines(store.pool) == before)
            #expect(try device.database.outbox.pendingCount() == 30)
            #expect(try Self.integrity(store.pool) == "ok")

            try Self.capFile(store.pool, sparePages: nil)
            _ = try await device.engine.sync()
            #expect(try await server.rows("note", in: "user:alice").count == 31)
            #expect(try await server.storeVersion() == 31)
            #expect(try device.database.outbox.pendingCount() == 0)
        }
    }
}
