@testable import Ferry
import FerryProtocol
import Foundation
import GRDB
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
            #expect(summary.pulled >= 1, "a push not taken as written pulls")
            #expect(try writer.note("n1")?.title == "from other")
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
