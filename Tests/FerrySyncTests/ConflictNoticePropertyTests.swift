@_spi(Benchmarks) @testable import Ferry
import FerryTesting
@testable import FerryServer
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// Random edits on three devices of two users, in a private and a shared
/// scope, under every policy: every value the server applied and later
/// discarded for a writer who had not seen the change is reported to each
/// device of that writer's user exactly once (the overriding device by its
/// push reply, every other one by a notice), no other notice arrives, and
/// the replicas converge.
///
/// The oracle comes from what the devices sent and were answered, recorded
/// on the wire: every written value is unique and names its device, and
/// every row id names the device that inserted it (rows are never
/// re-created), so each discarded value has one known writer.
@Suite(.postgresTurns) struct ConflictNoticePropertyTests {
    static let seeds: [UInt64] = [1, 2, 3, 4, 5]

    @Test(arguments: StoreKind.available, ConflictPolicy.allCases)
    func everyDiscardedValueIsReportedOnceToEachDeviceOfItsWriter(kind: StoreKind, policy: ConflictPolicy) async throws {
        for seed in Self.seeds {
            try await run(kind: kind, policy: policy, seed: seed)
        }
    }

    /// One push exchange as the device saw it.
    struct Exchange: Sendable {
        var device: String
        var request: PushRequest
        var response: PushResponse
    }

    /// Records every answered push on the way through.
    final class RecordingTransport: SyncTransport {
        let inner: any SyncTransport
        let device: String
        let log: Locked<[Exchange]>

        init(_ inner: any SyncTransport, device: String, log: Locked<[Exchange]>) {
            self.inner = inner
            self.device = device
            self.log = log
        }

        func push(_ request: PushRequest, token: String?) async throws -> PushResponse {
            let response = try await inner.push(request, token: token)
            log.withLock { $0.append(Exchange(device: device, request: request, response: response)) }
            return response
        }

        func pull(_ request: PullRequest, token: String?) async throws -> PullResponse {
            try await inner.pull(request, token: token)
        }

        func row(scope: String, table: String, rowID: String, token: String?) async throws -> ServerRow? {
            try await inner.row(scope: scope, table: table, rowID: rowID, token: token)
        }

        func live(scopes: [String], token: String?) -> AsyncThrowingStream<LiveMessage, any Error> {
            inner.live(scopes: scopes, token: token)
        }
    }

    /// A reported discard: `writer`'s value of `column` was discarded by `overrider`.
    struct Discard: Hashable, CustomStringConvertible {
        var table: String
        var rowID: String
        var column: String
        var value: ColumnValue?
        var description: String { "\(table)/\(rowID).\(column)=\(value.map { "\($0)" } ?? "nil")" }
    }

    private static let users = ["d1": "alice", "d2": "alice", "d3": "bob"]

    /// The device that wrote `value` into `column` of `rowID`.
    private static func writer(of value: ColumnValue?, column: String, rowID: String) -> String {
        if case .text(let text)? = value, let hash = text.firstIndex(of: "#"), ["title", "body", "name"].contains(column) {
            return String(text[..<hash])
        }
        // Set once, by the insert: the row id names its inserter.
        return String(rowID.prefix { $0 != "-" })
    }

    private func run(kind: StoreKind, policy: ConflictPolicy, seed: UInt64) async throws {
        let directory = try TemporaryDirectory()
        let rules = ServerTables(rules: ["note": TableRule(policy: policy), "item": TableRule(policy: policy)])
        try await SyncServer.with(kind, tables: rules) { server in
            try await server.store.createScope("team-blue", owner: "alice")
            try await server.store.setMember("bob", role: .write, in: "team-blue")
            let log = Locked<[Exchange]>([])
            var devices: [(name: String, device: Device)] = []
            for name in ["d1", "d2", "d3"] {
                let device = try await Device.make(
                    name, user: Self.users[name]!, server: server, directory: directory,
                    configure: { $0.sharedScopes = ["team-blue"] },
                    transport: { RecordingTransport($0, device: name, log: log) })
                devices.append((name, device))
            }
            var random = SplitMix64(seed: seed &* 7919 &+ UInt64(ConflictPolicy.allCases.firstIndex(of: policy)!))
            var counter = 0
            func unique(_ device: String) -> String {
                counter += 1
                return "\(device)#\(counter)"
            }

            for _ in 0..<60 {
                let (name, device) = devices[Int(random.next() % 3)]
                let shared = random.next() % 3 != 0 || Self.users[name] == "bob"
                let table = shared ? "item" : "note"
                let ids = try await device.database.read { db in try String.fetchAll(db, sql: "SELECT id FROM \(table) ORDER BY id") }
                switch random.next() % 10 {
                case 0...1:
                    counter += 1
                    let id = "\(name)-\(counter)"
                    if shared {
                        try device.execute("INSERT INTO item(id, listScope, name) VALUES (?, 'team-blue', ?)", [id, unique(name)])
                    } else {
                        try device.execute("INSERT INTO note(id, title, body) VALUES (?, ?, ?)", [id, unique(name), unique(name)])
                    }
                case 2 where !ids.isEmpty:
                    try device.execute("DELETE FROM \(table) WHERE id = ?", [ids[Int(random.next() % UInt64(ids.count))]])
                case 3...6 where !ids.isEmpty:
                    let id = ids[Int(random.next() % UInt64(ids.count))]
                    let column = shared ? "name" : (random.next() % 2 == 0 ? "title" : "body")
                    try device.execute("UPDATE \(table) SET \(column) = ? WHERE id = ?", [unique(name), id])
                default:
                    try await device.engine.sync()
                }
            }
            for _ in 0..<2 {
                for (_, device) in devices { try await device.engine.sync() }
            }

            // The oracle: each discard the server reported to the device whose push made it.
            var discards: [(writer: String, overrider: String, discard: Discard)] = []
            var seen: Set<String> = []
            for exchange in log.withLock({ $0 }) {
                let mutations = Dictionary(uniqueKeysWithValues: exchange.request.mutations.map { ($0.mutationID, $0) })
                for result in exchange.response.results {
                    guard let mutation = mutations[result.mutationID] else { continue }
                    for conflict in result.conflicts {
                        let overrode = conflict.kind == .deleteOverrodeUpdate || (conflict.kind == .column && conflict.resolution == .keptLocal)
                        guard overrode, let column = conflict.column else { continue }
                        guard seen.insert("\(exchange.request.clientID)/\(result.mutationID)/\(column)").inserted else { continue }
                        let discard = Discard(table: mutation.table, rowID: mutation.rowID, column: column, value: conflict.server)
                        discards.append((Self.writer(of: conflict.server, column: column, rowID: mutation.rowID), exchange.device, discard))
                    }
                }
            }

            var reported = 0
            for (name, device) in devices {
                let expected =
                    discards
                    .filter { Self.users[$0.writer] == Self.users[name] && $0.overrider != name }
                    .map(\.discard)
                let notices = try device.database.conflicts.list().filter { $0.mutationID == 0 }
                let received = notices.map { Discard(table: $0.table, rowID: $0.rowID, column: $0.column ?? "", value: $0.mine) }
                #expect(
                    received.sorted { $0.description < $1.description } == expected.sorted { $0.description < $1.description },
                    "seed \(seed), \(policy), device \(name)")
                for notice in notices {
                    #expect(notice.overriddenBy != nil && notice.resolution == .keptServer)
                }
                reported += expected.count
            }
            // Every replica holds what the server holds.
            let serverItems = try await server.store.pull(
                PullRequest(clientID: "oracle", scopes: [.init(scope: "team-blue")]), userID: "alice", limit: 10_000
            ).pages[0].changes.filter { !$0.deleted }
            let expectedItems = Dictionary(uniqueKeysWithValues: serverItems.map { ($0.rowID, $0.values["name"]) })
            for (name, device) in devices {
                let items = try await device.database.read { db in
                    Dictionary(
                        uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT id, name FROM item").map {
                            ($0["id"] as String, ($0["name"] as String?).map(ColumnValue.text))
                        })
                }
                #expect(items == expectedItems, "seed \(seed), \(policy), device \(name)")
                #expect(try device.database.outbox.pendingCount() == 0)
            }
            let notes = try devices[0].device.notes()
            #expect(try devices[1].device.notes() == notes, "seed \(seed), \(policy)")
            print("seed \(seed) \(kind) \(policy): \(discards.count) discards, \(reported) notices")
        }
    }
}
