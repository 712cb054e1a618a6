import Ferry
import FerryProtocol
@testable import FerryServer
import Foundation
import Testing
import FerryTestSupport

/// The app's backend through the admin API, against the real server on a
/// real socket: its writes reach devices through the same merge as a push,
/// and override a device's edit the way another device would.
@Suite(.postgresTurns, .serialized)
struct BackendTests {
    static func note(_ requestID: String, _ rowID: String, scope: String = "user:alice", base: Int64? = nil, _ columns: [String: ColumnValue])
        -> BackendWriteRequest
    {
        BackendWriteRequest(
            writer: "moderation", requestID: requestID,
            writes: [BackendWrite(scope: scope, table: "note", rowID: rowID, columns: columns, baseVersion: base)])
    }

    /// A backend write is pulled by the user's device; the same request
    /// again changes nothing; refused requests change nothing either.
    @Test(arguments: StoreKind.available)
    func aBackendWriteReachesTheUsersDevice(kind: StoreKind) async throws {
        try await SyncServer.with(kind, configure: SyncServer.withAdmin) { server in
            let directory = try TemporaryDirectory()
            let phone = try await Device.make("phone", user: "alice", server: server, directory: directory)
            let first = try await server.admin.write(Self.note("welcome-1", "n1", ["title": .text("Welcome"), "counter": .integer(1)]))
            #expect(first.results.map(\.status) == [.applied] && first.results[0].replayed == false)
            try await phone.engine.sync()
            #expect(try phone.note("n1") == Note(title: "Welcome", body: nil, counter: 1))

            // Sent again after a lost reply: acknowledged with the same version, nothing applied twice.
            let again = try await server.admin.write(Self.note("welcome-1", "n1", ["title": .text("Changed?")]))
            #expect(again.results[0].replayed && again.results[0].version == first.results[0].version)
            let row = try #require(try await server.store.row(scope: "user:alice", table: "note", rowID: "n1"))
            #expect(row.values["title"] == .text("Welcome") && row.version == first.results[0].version)

            // A shared scope that does not exist, no credential, a bad body: refused, nothing written.
            let missing = try await server.admin.send(.POST, "/admin/v1/writes", body: Self.note("x", "n2", scope: "nope@alice", ["title": .text("x")]))
            #expect(missing.status == 404)
            var stranger = server.admin
            stranger.token = "not-the-admin-token-0123456789abcdef"
            #expect(try await stranger.send(.POST, "/admin/v1/writes", body: Self.note("y", "n3", ["title": .text("x")])).status == 401)
            let badColumn = try await server.admin.send(
                .POST, "/admin/v1/writes", json: #"{"writer":"m","requestID":"z","writes":[{"scope":"user:alice","table":"note","rowID":"n4","operation":"upsert","columns":{"a b":1}}]}"#)
            #expect(badColumn.status == 400, "\(badColumn.text)")
            let deleteWithColumns = try await server.admin.send(
                .POST, "/admin/v1/writes", json: #"{"writer":"m","requestID":"z","writes":[{"scope":"user:alice","table":"note","rowID":"n1","operation":"delete","columns":{"title":"x"}}]}"#)
            #expect(deleteWithColumns.status == 400)
            for rowID in ["n2", "n3", "n4"] {
                #expect(try await server.store.row(scope: "user:alice", table: "note", rowID: rowID) == nil)
            }
            // The user API does not serve the admin routes, whatever the token.
            #expect(try await AdminClient(port: server.port).send(.GET, "/admin/v1/scopes").status == 404)
        }
    }

    /// A device's unsynced edit of a column the backend changed since is
    /// that device's conflict (last write wins: the backend's newer stamp);
    /// a backend write over a value a device had synced, from a base that
    /// had not seen it, is a notice to that device's user naming the writer.
    @Test(arguments: StoreKind.available)
    func aBackendWriteOverADevicesEditIsThatUsersConflict(kind: StoreKind) async throws {
        try await SyncServer.with(kind, configure: SyncServer.withAdmin) { server in
            let directory = try TemporaryDirectory()
            let phone = try await Device.make("phone", user: "alice", server: server, directory: directory)
            try phone.execute("INSERT INTO note(id, title, body) VALUES ('n1', 'draft', 'text')")
            try await phone.engine.sync()

            // Edited offline; meanwhile the backend moderates the title.
            try phone.execute("UPDATE note SET title = 'mine' WHERE id = 'n1'")
            try await Task.sleep(for: .milliseconds(5))
            _ = try await server.admin.write(Self.note("moderate-1", "n1", ["title": .text("[removed]")]))
            let summary = try await phone.engine.sync()
            #expect(summary.conflicts == 1)
            let conflict = try #require(try phone.database.conflicts.list().first)
            #expect(conflict.column == "title" && conflict.mine == .text("mine") && conflict.theirs == .text("[removed]"))
            #expect(conflict.resolution == .keptServer)
            #expect(try phone.note("n1")?.title == "[removed]")
            try phone.database.conflicts.dismiss(conflict)
            try await phone.engine.sync()

            // The phone's body edit is applied; the backend then writes from the version before it.
            let before = try #require(try await server.store.row(scope: "user:alice", table: "note", rowID: "n1")).version
            try phone.execute("UPDATE note SET body = 'from the phone' WHERE id = 'n1'")
            try await phone.engine.sync()
            try await Task.sleep(for: .milliseconds(5))
            let results = try await server.admin.write(Self.note("moderate-2", "n1", base: before, ["body": .text("from the backend")]))
            #expect(results.results[0].status == .conflict || results.results[0].status == .merged, "\(results.results)")
            try await phone.engine.sync()
            let notice = try #require(try phone.database.conflicts.list().first { $0.column == "body" })
            #expect(notice.mine == .text("from the phone") && notice.overriddenBy == "server:moderation")
            #expect(try phone.note("n1")?.body == "from the backend")
        }
    }

    /// A member the backend removes from a shared scope: their live stream
    /// ends with `revoked`, reopens without that scope, and keeps bringing
    /// their own scope's news; their sync reports the scope as refused.
    @Test func aMemberRemovedByTheBackendKeepsLiveForTheRest() async throws {
        try await SyncServer.with(.sqlite, configure: SyncServer.withAdmin) { server in
            let admin = server.admin
            #expect(try await admin.send(.POST, "/admin/v1/scopes", json: #"{"scope":"trip@alice","owner":"alice"}"#).status == 201)
            #expect(try await admin.send(.PUT, "/admin/v1/scopes/trip@alice/members/bob", json: #"{"role":"read"}"#).status == 200)
            let directory = try TemporaryDirectory()
            let bob = try await Device.make(
                "bob", user: "bob", server: server, directory: directory,
                configure: {
                    $0.live = true
                    $0.sharedScopes = ["trip@alice"]
                })
            await bob.engine.start()
            #expect(try await eventually(within: .seconds(10)) { bob.engine.status.liveConnected })

            #expect(try await admin.send(.DELETE, "/admin/v1/scopes/trip@alice/members/bob").status == 204)
            #expect(try await admin.send(.DELETE, "/admin/v1/scopes/trip@alice/members/bob").status == 404)
            // The stream ended (revoked) and reopened for bob's own scope: his news still arrives live.
            #expect(try await eventually(within: .seconds(10)) { try await Self.liveOpens(server) >= 2 && bob.engine.status.liveConnected })
            _ = try await admin.write(Self.note("for-bob", "b1", scope: "user:bob", ["title": .text("still live")]))
            #expect(try await eventually(within: .seconds(10)) { try bob.note("b1")?.title == "still live" })
            #expect(try await Self.liveOpens(server) <= 3, "a reopening or two, not a loop of refused ones")
            await bob.engine.stop()
            let summary = try await bob.engine.sync()
            #expect(summary.refusedScopes == ["trip@alice"])
        }
    }

    /// Live streams the server opened (200) so far.
    static func liveOpens(_ server: SyncServer) async throws -> Int {
        try await AdminClient(port: server.port).send(.GET, "/metrics").text.split(separator: "\n")
            .filter { $0.hasPrefix("ferry_http_requests_total") && $0.contains(#"route="/v1/live""#) && $0.contains(#"status="200""#) }
            .compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +)
    }
}
