import Ferry
import FerryHTTPClient
import FerryProtocol
import FerryServer
import FerryTestSupport
import FerryTesting
import Foundation
import GRDB
import Testing

/// `FerryTesting`'s server double: the real router and store pipeline with
/// no socket. Devices converge, conflicts are reported, live news arrives,
/// attachments move byte for byte, and a refusal reads exactly as it does
/// over a real socket from the same server code.
@Suite struct InMemorySyncServerTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    @Test(arguments: [ConflictPolicy.lastWriteWins, .serverWins])
    func devicesConvergeAndTheOverriddenWriterIsTold(policy: ConflictPolicy) async throws {
        let server = try await InMemorySyncServer { $0.tables = ServerTables(rules: ["note": TableRule(policy: policy)]) }
        let a = try await Device.make("a", user: "alice", server: server, directory: directory)
        let b = try await Device.make("b", user: "alice", server: server, directory: directory)
        try a.execute("INSERT INTO note(id, title, body) VALUES ('n1', 'draft', 'empty')")
        try await a.engine.sync()
        try await b.engine.sync()
        #expect(try b.note("n1") == Note(title: "draft", body: "empty", counter: 0))

        try a.execute("UPDATE note SET title = 'from a' WHERE id = 'n1'")
        try await Task.sleep(for: .milliseconds(5))
        try b.execute("UPDATE note SET title = 'from b', body = 'milk' WHERE id = 'n1'")
        try await a.engine.sync()
        let summary = try await b.engine.sync()
        try await a.engine.sync()

        let winner = policy == .lastWriteWins ? "from b" : "from a"
        #expect(try a.note("n1") == Note(title: winner, body: "milk", counter: 0))
        #expect(try b.note("n1") == Note(title: winner, body: "milk", counter: 0))
        #expect(summary.conflicts == 1)
        let conflict = try #require(try b.database.conflicts.list().first)
        #expect(conflict.column == "title" && conflict.mine == .text("from b") && conflict.theirs == .text("from a"))
        // The server holds what the devices hold.
        let row = try #require(try await server.store.row(scope: "user:alice", table: "note", rowID: "n1"))
        #expect(row.values["title"] == .text(winner) && row.values["body"] == .text("milk"))
        #expect(conflict.resolution == (policy == .lastWriteWins ? .keptLocal : .keptServer))
        if policy == .lastWriteWins {
            // `a`, whose value `b` overrode, hears of it on its next pull.
            try await a.engine.sync()
            #expect(try a.database.conflicts.list().contains { $0.column == "title" && $0.mine == .text("from a") && $0.overriddenBy != nil })
        }
        try await server.close()
    }

    @Test func liveNewsReachesAListeningDevice() async throws {
        let server = try await InMemorySyncServer()
        let a = try await Device.make("a", user: "alice", server: server, directory: directory) { $0.debounce = .milliseconds(20) }
        let b = try await Device.make("b", user: "alice", server: server, directory: directory) { $0.live = true }
        await a.engine.start()
        await b.engine.start()
        #expect(try await eventually(within: .seconds(10)) { b.engine.status.liveConnected })
        let latencies = try await a.latencies(to: b, count: 3, title: "live")
        #expect(latencies.count == 3)
        await a.engine.stop()
        await b.engine.stop()
        // The route's subscription ends with the stream, as with a closed socket.
        #expect(try await eventually(within: .seconds(10)) { server.store.changeFeed.subscriberCount == 0 })
        try await server.close()
    }

    @Test func anAttachmentMovesByteForByte() async throws {
        let server = try await InMemorySyncServer()
        let a = try await Device.make("a", user: "alice", server: server, directory: directory)
        let b = try await Device.make(
            "b", user: "alice", server: server, directory: directory,
            configureDatabase: { $0.attachmentDownloads = ["note": .eager] })
        try a.execute("INSERT INTO note(id, title) VALUES ('n1', 'with a scan')")
        // Several of the store's 1 MiB chunks, streamed in one request.
        var random = SplitMix64(seed: 9)
        let scan = Data((0..<(9 << 20 + 17)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        let added = try await a.database.attachments.add(data: scan, to: "note", row: "n1", name: "scan.pdf")
        let pushed = try await a.engine.sync()
        #expect(pushed.attachmentsUploaded == 1 && pushed.attachmentTransfersFailed == 0)
        let pulled = try await b.engine.sync()
        #expect(pulled.attachmentsDownloaded == 1)
        let onB = try #require(try b.database.attachments.list(table: "note", row: "n1").first)
        #expect(onB.id == added.id)
        #expect(try b.database.attachments.data(for: onB) == scan)
        try await server.close()
    }

    /// The same refusals through the double and through AsyncHTTPClient to
    /// the same server code on a socket: equal errors, status, code and
    /// `Retry-After` included.
    @Test func refusalsReadAsTheyDoOverASocket() async throws {
        let double = try await InMemorySyncServer()
        let real = try await SyncServer.start()
        try await real.stopping {
            let socket = HTTPSyncTransport(baseURL: real.baseURL, requestTimeout: .seconds(10))
            let doubleToken = try await double.token(for: "alice")
            let realToken = try await real.token("alice")
            func refusal(_ call: (any SyncTransport, String) async throws -> Void) async -> [String] {
                var errors: [String] = []
                for (transport, token) in [(double.transport as any SyncTransport, doubleToken), (socket, realToken)] {
                    do {
                        try await call(transport, token)
                        errors.append("no error")
                    } catch {
                        errors.append(String(describing: error))
                    }
                }
                return errors
            }
            let cases: [(String, (any SyncTransport, String) async throws -> Void)] = [
                ("no token", { transport, _ in _ = try await transport.pull(PullRequest(clientID: "c1", scopes: [.init(scope: "user:alice")]), token: nil) }),
                ("another's scope", { transport, token in _ = try await transport.pull(PullRequest(clientID: "c1", scopes: [.init(scope: "user:bob")]), token: token) }),
                (
                    "a forged cursor",
                    { transport, token in
                        _ = try await transport.pull(PullRequest(clientID: "c1", scopes: [.init(scope: "user:alice", cursor: "forged")]), token: token)
                    }
                ),
                (
                    "a gap",
                    { transport, token in
                        let mutation = Mutation(
                            mutationID: 5, table: "note", rowID: "n1", scope: "user:alice", operation: .upsert,
                            columns: ["title": .text("x")], baseVersion: nil, hlc: HLCTimestamp(wallMilliseconds: 1, counter: 0))
                        _ = try await transport.push(PushRequest(clientID: "c1", mutations: [mutation]), token: token)
                    }
                ),
                (
                    "an unknown blob",
                    { transport, token in
                        _ = try await transport.blobOffset(scope: "user:bob", sha256: String(repeating: "a", count: 64), token: token)
                    }
                ),
            ]
            for (name, call) in cases {
                let errors = await refusal(call)
                #expect(errors[0] == errors[1], "\(name)")
                #expect(errors[0] != "no error", "\(name)")
            }
            #expect(try await double.transport.row(scope: "user:alice", table: "note", rowID: "none", token: doubleToken) == nil)
        }
        try await double.close()
    }
}
