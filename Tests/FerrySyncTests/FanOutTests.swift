@testable import Ferry
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// A write to a shared scope reaches every live member as the page built
/// once for all of them: each member ends with what a pull from scratch
/// gives, and a member removed mid-stream is told and gets no row written
/// after its removal.
@Suite(.postgresTurns) struct FanOutTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    private static func items(_ device: Device) throws -> [String: String] {
        try device.database.read { db in
            Dictionary(
                uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT id, name FROM item WHERE listScope = 'crew'").map {
                    ($0["id"], $0["name"] ?? "")
                })
        }
    }

    /// The server's count of live events built from the store, and shared.
    private static func liveEvents(_ server: SyncServer) async throws -> (built: Int, shared: Int) {
        (
            try await server.metric(#"ferry_live_events_total{source="built"}"#),
            try await server.metric(#"ferry_live_events_total{source="shared"}"#)
        )
    }

    @Test(arguments: StoreKind.available)
    func everyMemberGetsEachChangeAsAPullWouldAndARemovedMemberStops(kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            try await server.store.createScope("crew", owner: "alice")
            let memberNames = (0..<6).map { "m\($0)" }
            for name in memberNames { try await server.store.setMember(name, role: .read, in: "crew") }
            let shared: (inout SyncConfiguration) -> Void = {
                $0.sharedScopes = ["crew"]
                $0.periodicInterval = nil
            }
            let writer = try await Device.make("writer", user: "alice", server: server, directory: directory, configure: shared)
            var members: [Device] = []
            for name in memberNames {
                members.append(
                    try await Device.make(
                        name, user: name, server: server, directory: directory,
                        configure: {
                            shared(&$0)
                            $0.live = true
                        }))
            }
            for member in members {
                try await member.engine.sync()
                await member.engine.start()
            }
            let everyone = members
            defer { Task { for member in everyone { await member.engine.stop() } } }
            for member in members {
                #expect(try await eventually(within: .seconds(10)) { member.engine.status.liveConnected })
                #expect(try await eventually(within: .seconds(10)) { member.engine.status.phase == .idle })
            }
            let before = try await Self.liveEvents(server)

            // Rounds of inserts, updates and deletes, each pushed as one change; every member follows live.
            var expected: [String: String] = [:]
            for round in 0..<6 {
                for index in 0..<4 {
                    let id = "i\(round)-\(index)"
                    try writer.execute("INSERT INTO item(id, listScope, name) VALUES (?, 'crew', ?)", [id, "new \(round)"])
                    expected[id] = "new \(round)"
                }
                if round > 0 {
                    try writer.execute("UPDATE item SET name = ? WHERE id = ?", ["changed \(round)", "i\(round - 1)-0"])
                    expected["i\(round - 1)-0"] = "changed \(round)"
                    try writer.execute("DELETE FROM item WHERE id = ?", ["i\(round - 1)-1"])
                    expected["i\(round - 1)-1"] = nil
                }
                try await writer.engine.sync()
                for member in members {
                    #expect(try await eventually(within: .seconds(10)) { try Self.items(member) == expected }, "round \(round)")
                }
            }
            let after = try await Self.liveEvents(server)
            #expect(after.shared - before.shared >= 6 * (members.count - 1) / 2, "most members took the page built for another")

            // m5 loses the scope: its stream is told, and the next write never reaches it.
            let removed = members.removeLast()
            let kept = try Self.items(removed)
            _ = try await server.store.removeMember("m5", from: "crew")
            try writer.execute("INSERT INTO item(id, listScope, name) VALUES ('late', 'crew', 'after m5 left')")
            expected["late"] = "after m5 left"
            try await writer.engine.sync()
            for member in members {
                #expect(try await eventually(within: .seconds(10)) { try Self.items(member) == expected })
            }
            try await Task.sleep(for: .milliseconds(300))
            #expect(try Self.items(removed)["late"] == nil)
            #expect(try Self.items(removed).count <= kept.count)

            // Each member holds what a device pulling from scratch holds.
            let fresh = try await Device.make("fresh", user: "m0", server: server, directory: directory, configure: shared)
            try await fresh.engine.sync()
            #expect(try Self.items(fresh) == expected)
            for member in members {
                #expect(try Self.items(member) == Self.items(fresh))
            }
        }
    }
}
