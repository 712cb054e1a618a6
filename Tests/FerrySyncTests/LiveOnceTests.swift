@testable import Ferry
import FerryBenchmarks
import FerryHTTPClient
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// A row that reaches a device on its live stream is not downloaded again by
/// the next pull: the live page holds every change after the device's
/// cursor, so applying it moves the cursor (counted in the bytes a relay
/// carried to the device, uncompressed). Nothing is skipped: a device whose
/// cursor the page does not cover keeps its cursor and pulls the row.
@Suite(.postgresTurns) struct LiveOnceTests {
    /// 200 characters no JSON escaping changes, found only in the row.
    static func marker() -> String {
        "live-once-" + (0..<19).map { _ in UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(10) }.joined()
    }

    @Test(arguments: StoreKind.available)
    func aLiveChangeFollowedByAPullDownloadsTheRowOnce(kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let directory = try TemporaryDirectory()
            let relay = try ByteCountingProxy(target: server.port, capturing: true)
            defer { relay.stop() }
            let relayURL = try #require(URL(string: "http://127.0.0.1:\(relay.port)"))
            let writer = try await Device.make("writer", user: "alice", server: server, directory: directory)
            let reader = try await Device.make(
                "reader", user: "alice", baseURL: relayURL, directory: directory, configure: { $0.live = true },
                transport: { _ in HTTPSyncTransport(baseURL: relayURL, requestTimeout: .seconds(10), compression: false) },
                token: try await server.token("alice"))
            try await reader.engine.sync()
            defer { Task { await reader.engine.stop() } }
            try await reader.startLive()

            let marker = Self.marker()
            try writer.execute("INSERT INTO note(id, title) VALUES ('n1', ?)", [marker])
            try await writer.engine.sync()
            #expect(try await eventually(within: .seconds(10)) { try reader.note("n1")?.title == marker })
            #expect(relay.occurrences(of: marker) == 1, "the live page brought the row")

            let next = try await reader.engine.sync()
            #expect(next.pulled == 0, "the live page moved the cursor past the row")
            #expect(relay.occurrences(of: marker) == 1, "the pull did not download it again")

            // A second change, then a third device from scratch: everything is there, once.
            try writer.execute("UPDATE note SET body = 'second' WHERE id = 'n1'")
            try await writer.engine.sync()
            #expect(try await eventually(within: .seconds(10)) { try reader.note("n1")?.body == "second" })
            try await reader.engine.sync()
            let fresh = try await Device.make("fresh", user: "alice", server: server, directory: directory)
            try await fresh.engine.sync()
            #expect(try reader.notes() == fresh.notes())
        }
    }

    /// The client's rule for a live page, on a real database: a cursor the
    /// page covers moves to the page's end; one before the page (a gap) or
    /// past it stays where it is, and the rows still apply; so does one whose
    /// page holds a row with pending edits.
    @Test func aLivePageMovesOnlyACursorItCovers() async throws {
        let directory = try TemporaryDirectory()
        let database = try FerryDatabase(path: directory.path("client.sqlite"), schema: SyncSchema.schema())
        let applier = PageApplier(database: database, userScope: "user:alice")
        func cursor(_ position: Int64) -> String {
            // The cursor format the client reads (its signature is not the client's to check).
            let payload = Data("c2|e1|user:alice|\(position)|0|".utf8).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            return payload + ".mac"
        }
        func row(_ id: String, _ version: Int64) -> RowChange {
            RowChange(table: "note", rowID: id, version: version, deleted: false, values: ["id": .text(id), "title": .text(id)])
        }
        func stored() async throws -> String? {
            try await database.read { db in try String.fetchOne(db, sql: "SELECT cursor FROM ferry_cursors WHERE scope = 'user:alice'") }
        }
        _ = try await applier.apply(PullPage(scope: "user:alice", changes: [], cursor: cursor(10), hasMore: false, reset: false))

        let gap = PullPage(scope: "user:alice", changes: [row("a", 12)], cursor: cursor(12), hasMore: false, reset: false, after: cursor(11))
        #expect(try await applier.apply(gap, movesCursor: false).movedCursor == false)
        #expect(try await stored() == cursor(10), "rows after 10 up to 11 may be missing: the cursor stays")

        let covering = PullPage(scope: "user:alice", changes: [row("a", 12), row("b", 13)], cursor: cursor(13), hasMore: false, reset: false, after: cursor(9))
        #expect(try await applier.apply(covering, movesCursor: false).movedCursor)
        #expect(try await stored() == cursor(13))

        let behind = PullPage(scope: "user:alice", changes: [row("b", 13)], cursor: cursor(13), hasMore: false, reset: false, after: cursor(12))
        #expect(try await applier.apply(behind, movesCursor: true).movedCursor, "a pulled page always moves it")
        let old = PullPage(scope: "user:alice", changes: [row("c", 11)], cursor: cursor(11), hasMore: false, reset: false, after: cursor(10))
        #expect(try await applier.apply(old, movesCursor: false).movedCursor == false)
        #expect(try await stored() == cursor(13), "a page that ends before the cursor never moves it back")
        let titles = try await database.read { db in try String.fetchAll(db, sql: "SELECT id FROM note ORDER BY id") }
        #expect(titles == ["a", "b", "c"])

        // A row with an edit not yet acknowledged keeps its pending columns over the page's: only a pull
        // after the push is answered brings the server's row whole, so the cursor stays.
        try await database.write { db in try db.execute(sql: "UPDATE note SET title = 'mine' WHERE id = 'a'") }
        let pendingRow = PullPage(
            scope: "user:alice", changes: [row("a", 14)], cursor: cursor(14), hasMore: false, reset: false, after: cursor(13))
        #expect(try await applier.apply(pendingRow, movesCursor: false).movedCursor == false)
        #expect(try await stored() == cursor(13))
        let other = PullPage(scope: "user:alice", changes: [row("b", 15)], cursor: cursor(15), hasMore: false, reset: false, after: cursor(13))
        #expect(try await applier.apply(other, movesCursor: false).movedCursor, "a page without that row still moves it")
    }
}
