@testable import Ferry
import FerryProtocol
import FerryTesting
import Foundation
import GRDB
import Synchronization
import Testing
import FerryTestSupport

/// A writer whose live stream brings what others write pushes alone: its
/// own change is not downloaded back before others see it. A push the
/// server did not take as written goes on to pull, so the writer ends with
/// the server's merge.
@Suite(.postgresTurns) struct PushOnlyTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    private static func pulls(_ server: SyncServer) async throws -> Int {
        try await server.metric("ferry_pulls_total")
    }

    @Test(arguments: StoreKind.available)
    func pushSendsTheChangeAndPullsNothing(kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let writer = try await Device.make("writer", user: "alice", server: server, directory: directory)
            let other = try await Device.make("other", user: "alice", server: server, directory: directory)
            let reader = try await Device.make("reader", user: "alice", server: server, directory: directory, configure: { $0.live = true })
            try await writer.engine.sync()
            try other.execute("INSERT INTO note(id, title) VALUES ('elsewhere', 'from other')")
            try await other.engine.sync()
            try await reader.engine.sync()
            defer { Task { await reader.engine.stop() } }
            try await reader.startLive()

            let pullsBefore = try await Self.pulls(server)
            try writer.execute("INSERT INTO note(id, title) VALUES ('n1', 'pushed alone')")
            let summary = try await writer.engine.push()
            #expect(summary.pushed == 1 && summary.pulled == 0)
            #expect(try writer.note("elsewhere") == nil, "nothing was pulled")
            #expect(try await Self.pulls(server) == pullsBefore)
            #expect(try await eventually(within: .seconds(10)) { try reader.note("n1")?.title == "pushed alone" })
            #expect(writer.engine.status.pendingCount == 0)

            // A sync afterwards brings the rest.
            try await writer.engine.sync()
            #expect(try writer.note("elsewhere")?.title == "from other")
        }
    }

    @Test(arguments: StoreKind.available)
    func aPushInConflictPullsTheServersMerge(kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let writer = try await Device.make("writer", user: "alice", server: server, directory: directory)
            let other = try await Device.make("other", user: "alice", server: server, directory: directory)
            try writer.execute("INSERT INTO note(id, title) VALUES ('n1', 'first')")
            try await writer.engine.sync()
            try await other.engine.sync()
            // The writer's edit is older than the other's, which reaches the server first: the other's wins.
            try writer.execute("UPDATE note SET title = 'from writer' WHERE id = 'n1'")
            try await Task.sleep(for: .milliseconds(5))
            try other.execute("UPDATE note SET title = 'from other' WHERE id = 'n1'")
            try await other.engine.sync()

            let summary = try await writer.engine.push()
            #expect(summary.pushed == 1 && summary.conflicts == 1)
            #expect(summary.pulled >= 1, "a push not taken as written pulls (its reply names no range to move the cursor over)")
            #expect(try writer.note("n1")?.title == "from other")
        }
    }

    /// A push applied as sent leaves the server's row as the writer holds
    /// it, so the writer's next edit is based on that version (the server
    /// then reads only the history after it); a push merged with another
    /// writer's values is not, so a later edit still meets them.
    @Test(arguments: StoreKind.available)
    func anEditAppliedAsSentIsTheBaseOfTheNext(kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let writer = try await Device.make("writer", user: "alice", server: server, directory: directory)
            let other = try await Device.make("other", user: "alice", server: server, directory: directory)
            try writer.execute("INSERT INTO note(id, title, body) VALUES ('n1', 'first', 'b')")
            try await writer.engine.sync()
            func known(_ device: Device) throws -> Int64? {
                try device.database.writer.read { db in try KnownVersions.version(table: "note", rowID: "n1", db) }
            }
            func nextBase(_ device: Device) throws -> Int64? {
                try device.database.outbox.pendingMutations().first { $0.rowID == "n1" }?.baseVersion
            }
            let pulled = try #require(try known(writer))

            try writer.execute("UPDATE note SET title = 'second' WHERE id = 'n1'")
            #expect(try nextBase(writer) == pulled)
            _ = try await writer.engine.push()
            try await other.engine.sync()
            let applied = try #require(try known(other), "the other device pulled the writer's version")
            #expect(applied > pulled)
            #expect(try known(writer) == applied)
            try writer.execute("UPDATE note SET title = 'third' WHERE id = 'n1'")
            #expect(try nextBase(writer) == applied)
            _ = try await writer.engine.push()

            // The other device changes the body; the writer's next push merges with it, unseen.
            try other.execute("UPDATE note SET body = 'from other' WHERE id = 'n1'")
            try await other.engine.sync()
            let beforeMerge = try #require(try known(writer))
            try writer.execute("UPDATE note SET title = 'fourth' WHERE id = 'n1'")
            let merged = try await writer.engine.push()
            #expect(merged.pushed == 1 && merged.conflicts == 0)
            #expect(try known(writer) == beforeMerge, "a merged push brought values the writer has not seen")
            // So an edit of the body made before the writer pulls still meets the other's.
            try writer.execute("UPDATE note SET body = 'from writer' WHERE id = 'n1'")
            #expect(try nextBase(writer) == beforeMerge)
            let late = try await writer.engine.push()
            #expect(late.conflicts == 1)
        }
    }

    /// A push reads the scope's cursor with its batch (the server checks it
    /// for lost history), and an edit written while a push is in flight
    /// goes in the same sync: the push after it is skipped only when the
    /// reply left nothing pending.
    @Test(arguments: StoreKind.available)
    func anEditWrittenDuringAPushGoesInTheSameSync(kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let hook = PushHook()
            let writer = try await Device.make(
                "writer", user: "alice", server: server, directory: directory, transport: { ForwardingTransport($0, willPush: hook.willPush) })
            try writer.execute("INSERT INTO note(id, title, body) VALUES ('n1', 'first', 'b')")
            try await writer.engine.sync()
            let cursor = try #require(try await writer.database.writer.read { db in try ScopeCursorRecord.find("user:alice", db).cursor })

            hook.arm(writer.database)
            try writer.execute("UPDATE note SET title = 'second' WHERE id = 'n1'")
            let summary = try await writer.engine.push()
            #expect(summary.pushed == 2, "the edit typed during the push went too")
            #expect(writer.engine.status.pendingCount == 0)
            // The first sync's identity check and push, then the two pushes of this one.
            let pushes = hook.requests.filter { !$0.mutations.isEmpty }
            #expect(pushes.count == 3)
            #expect(pushes[1].seen == PushRequest.Seen(scope: "user:alice", cursor: cursor))
            // The second names the cursor the first's reply moved over its own row (the embedded store), or the same.
            let second = try #require(pushes[2].seen)
            #expect(second.scope == "user:alice")
            let moved = try #require(CursorOrder(second.cursor)).position, held = try #require(CursorOrder(cursor)).position
            #expect(kind == .sqlite ? moved > held : moved == held)

            let reader = try await Device.make("reader", user: "alice", server: server, directory: directory)
            try await reader.engine.sync()
            #expect(try reader.note("n1") == Note(title: "second", body: "typed meanwhile", counter: 0))
        }
    }

    /// The background loop: a local write while the stream is open is
    /// pushed without a pull; its own live page comes back instead.
    @Test(arguments: StoreKind.available)
    func aLiveDeviceSendsItsLocalWritesWithoutPulling(kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let writer = try await Device.make(
                "writer", user: "alice", server: server, directory: directory,
                configure: {
                    $0.live = true
                    $0.periodicInterval = nil
                    $0.debounce = .milliseconds(20)
                })
            defer { Task { await writer.engine.stop() } }
            try await writer.startLive()

            let pullsBefore = try await Self.pulls(server)
            for index in 0..<5 {
                try writer.execute("INSERT INTO note(id, title) VALUES (?, 'background')", ["b\(index)"])
                // Read from the store itself: a pull over HTTP would count.
                #expect(
                    try await eventually(within: .seconds(10)) {
                        let page = try await server.store.pull(
                            PullRequest(clientID: "probe", scopes: [.init(scope: "user:alice")]), userID: "alice", limit: 100)
                        return page.pages.first?.changes.count == index + 1
                    })
            }
            #expect(try await eventually(within: .seconds(10)) { writer.engine.status.pendingCount == 0 })
            #expect(try await Self.pulls(server) == pullsBefore, "the writer pushed and did not pull")
            let fresh = try await Device.make("fresh", user: "alice", server: server, directory: directory)
            try await fresh.engine.sync()
            #expect(try fresh.notes() == writer.notes())
        }
    }
}

/// Keeps every push request, and once armed writes an edit on the device
/// before the next push reaches the server: a user typing while a push is
/// in flight.
private final class PushHook: Sendable {
    private let state = Mutex<(armed: FerryDatabase?, requests: [PushRequest])>((nil, []))

    func arm(_ database: FerryDatabase) {
        state.withLock { $0.armed = database }
    }

    var requests: [PushRequest] {
        state.withLock { $0.requests }
    }

    func willPush(_ request: PushRequest) async throws {
        let armed = state.withLock { state in
            state.requests.append(request)
            defer { state.armed = nil }
            return state.armed
        }
        try await armed?.write { db in try db.execute(sql: "UPDATE note SET body = 'typed meanwhile' WHERE id = 'n1'") }
    }
}
