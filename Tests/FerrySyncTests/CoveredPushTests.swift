@testable import Ferry
import FerryProtocol
import FerryTesting
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// A push whose rows are the only changes in their scope since the device's
/// cursor moves the cursor over them (`PushResponse.covered`): a sync after
/// a drain does not download the device's own rows back, and still brings
/// every row another device wrote.
@Suite(.postgresTurns) struct CoveredPushTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    /// The embedded store names the ranges; the PostgreSQL store names none,
    /// and its clients pull their rows back as before. Either way a new
    /// device ends with the writer's rows.
    @Test(arguments: StoreKind.available)
    func aSyncAfterADrainDoesNotDownloadItsOwnRows(kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let writer = try await Device.make("writer", user: "alice", server: server, directory: directory) { $0.pushBatchSize = 40 }
            try await writer.engine.sync()
            try await writer.database.write { db in
                for n in 0..<130 { try db.execute(sql: "INSERT INTO note(id, title) VALUES (?, ?)", arguments: ["n\(n)", "t\(n)"]) }
            }
            let drain = try await writer.engine.sync()
            #expect(drain.pushed == 130)
            #expect(drain.pulled == (kind == .sqlite ? 0 : 130))

            try writer.execute("UPDATE note SET title = 'edited' WHERE id = 'n7'")
            try writer.execute("DELETE FROM note WHERE id = 'n8'")
            let edit = try await writer.engine.sync()
            #expect(edit.pushed == 2 && edit.pulled == (kind == .sqlite ? 0 : 2))

            let fresh = try await Device.make("fresh", user: "alice", server: server, directory: directory)
            try await fresh.engine.sync()
            #expect(try fresh.notes() == writer.notes())
            #expect(try fresh.notes().count == 129)
            // The writer's cursor is where a pull would have left it: the next pull finds nothing.
            #expect(try await writer.engine.sync().pulled == 0)
        }
    }

    /// A device whose first sync drains its offline rows into a scope that
    /// held none pulls nothing back; into a scope that held rows, its
    /// first pull brings them all, its own too.
    @Test func aFirstSyncIntoAnEmptyScopeDoesNotDownloadItsOwnRows() async throws {
        try await SyncServer.with(.sqlite) { server in
            let first = try await Device.make("first", user: "alice", server: server, directory: directory)
            try first.execute("INSERT INTO note(id, title) VALUES ('a', 'offline'), ('b', 'offline')")
            let summary = try await first.engine.sync()
            #expect(summary.pushed == 2 && summary.pulled == 0)

            let second = try await Device.make("second", user: "alice", server: server, directory: directory)
            try second.execute("INSERT INTO note(id, title) VALUES ('c', 'offline')")
            let joined = try await second.engine.sync()
            #expect(joined.pushed == 1 && joined.pulled == 3)
            try await first.engine.sync()
            #expect(try first.notes() == second.notes())
            #expect(try first.notes().count == 3)
        }
    }

    /// A row another device wrote in the scope after this one's last pull
    /// lies inside the push's range: the cursor stays, and the pull brings
    /// it (with the device's own rows).
    @Test func aRowWrittenElsewhereSinceThePullIsStillPulled() async throws {
        try await SyncServer.with(.sqlite) { server in
            let writer = try await Device.make("writer", user: "alice", server: server, directory: directory)
            let other = try await Device.make("other", user: "alice", server: server, directory: directory)
            try await writer.engine.sync()
            try other.execute("INSERT INTO note(id, title) VALUES ('elsewhere', 'from other')")
            try await other.engine.sync()

            try writer.execute("INSERT INTO note(id, title) VALUES ('mine', 'from writer')")
            let summary = try await writer.engine.sync()
            #expect(summary.pushed == 1 && summary.pulled == 2)
            #expect(try writer.note("elsewhere")?.title == "from other")
            try await other.engine.sync()
            #expect(try other.notes() == writer.notes())
        }
    }

    /// A delete elsewhere is a change of the scope too: its tombstone lies
    /// in the push's range, and the pull brings it.
    @Test func aRowDeletedElsewhereSinceThePullIsStillDeleted() async throws {
        try await SyncServer.with(.sqlite) { server in
            let writer = try await Device.make("writer", user: "alice", server: server, directory: directory)
            let other = try await Device.make("other", user: "alice", server: server, directory: directory)
            try writer.execute("INSERT INTO note(id, title) VALUES ('gone', 'x')")
            try await writer.engine.sync()
            try await other.engine.sync()
            try other.execute("DELETE FROM note WHERE id = 'gone'")
            try await other.engine.sync()

            try writer.execute("INSERT INTO note(id, title) VALUES ('mine', 'from writer')")
            try await writer.engine.sync()
            #expect(try writer.note("gone") == nil)
            #expect(try writer.notes().keys.sorted() == ["mine"])
        }
    }

    /// Writes in another scope move the store's version, not this scope's
    /// last change: the push still covers the device's cursor.
    @Test func writesInAnotherScopeDoNotStopTheCursor() async throws {
        try await SyncServer.with(.sqlite) { server in
            let alice = try await Device.make("alice", user: "alice", server: server, directory: directory)
            let bob = try await Device.make("bob", user: "bob", server: server, directory: directory)
            try await alice.engine.sync()
            try bob.execute("INSERT INTO note(id, title) VALUES ('b1', 'bob')")
            try await bob.engine.sync()

            try alice.execute("INSERT INTO note(id, title) VALUES ('a1', 'alice')")
            let summary = try await alice.engine.sync()
            #expect(summary.pushed == 1 && summary.pulled == 0)
            #expect(try alice.notes().keys.sorted() == ["a1"])
        }
    }
}

/// The device's side of a covered range (`PushRecorder`): the cursor moves
/// only from inside the range, of the same history, and not while the
/// scope starts over.
@Suite struct CoveredCursorTests {
    /// A `c2` cursor as the server writes it (the device reads only its unsigned part).
    static func cursor(_ position: Int64, scope: String = "user:alice", generation: String = "") -> String {
        let payload = Data("c2|e1|\(scope)|\(position)|0|\(generation)".utf8)
        return payload.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "") + ".mac"
    }

    private static func moved(from held: String?, refetching: Bool = false, over range: PushResponse.CoveredScope) async throws -> String? {
        let database = try FerryDatabase(writer: DatabaseQueue(), schema: SyncSchema.schema())
        try await database.write { db in
            try ScopeCursorRecord(scope: "user:alice", cursor: held, refetching: refetching).store(db)
        }
        let recorder = PushRecorder(database: database, userScope: "user:alice")
        let report = try await recorder.record(
            PushResponse(lastAppliedMutationID: 0, results: [], covered: [range]), for: [], assignedUpTo: 0)
        let stored = try await database.read { db in try ScopeCursorRecord.find("user:alice", db).cursor }
        if let moved = report.movedCursors["user:alice"] { #expect(moved == stored, "the engine's cursor is the stored one") }
        return stored
    }

    @Test func aCursorInsideTheRangeMovesToItsEnd() async throws {
        let range = PushResponse.CoveredScope(scope: "user:alice", after: Self.cursor(3), cursor: Self.cursor(9))
        #expect(try await Self.moved(from: Self.cursor(3), over: range) == Self.cursor(9))
        #expect(try await Self.moved(from: Self.cursor(5), over: range) == Self.cursor(9))
        #expect(try await Self.moved(from: Self.cursor(9), over: range) == Self.cursor(9))
        let fromEmpty = PushResponse.CoveredScope(scope: "user:alice", after: Self.cursor(3), cursor: Self.cursor(9), emptyBefore: true)
        #expect(try await Self.moved(from: nil, over: fromEmpty) == Self.cursor(9), "a first pull would bring the push's rows alone")
    }

    @Test func anyOtherCursorStays() async throws {
        let range = PushResponse.CoveredScope(scope: "user:alice", after: Self.cursor(3), cursor: Self.cursor(9))
        #expect(try await Self.moved(from: Self.cursor(2), over: range) == Self.cursor(2), "it missed a change before the push")
        #expect(try await Self.moved(from: Self.cursor(10), over: range) == Self.cursor(10), "never back")
        #expect(try await Self.moved(from: nil, over: range) == nil, "a scope never pulled fetches from scratch")
        #expect(try await Self.moved(from: Self.cursor(5, generation: "g2"), over: range) == Self.cursor(5, generation: "g2"))
        #expect(try await Self.moved(from: "garbled", over: range) == "garbled")
        #expect(try await Self.moved(from: Self.cursor(5), refetching: true, over: range) == Self.cursor(5))
        let fromEmpty = PushResponse.CoveredScope(scope: "user:alice", after: Self.cursor(3), cursor: Self.cursor(9), emptyBefore: true)
        #expect(try await Self.moved(from: nil, refetching: true, over: fromEmpty) == nil, "a refetch ends with its sweep")
        #expect(try await Self.moved(from: Self.cursor(2), over: fromEmpty) == Self.cursor(2), "a cursor held is judged by the range")
    }
}
