@_spi(Benchmarks) import Ferry
import FerryHTTPClient
import FerryProtocol
@testable import FerryServer
import FerryTestSupport
import Foundation
import GRDB
import Logging
import Testing

/// A seeded simulation: several devices of two users, some sharing a
/// scope, insert, update, delete and re-create rows online and offline
/// while the network drops requests and replies, duplicates and reorders
/// them, and devices restart; under every conflict policy, with a
/// validator that rejects some writes. At quiescence every replica equals
/// the server and no device has anything left to send.
///
/// `FERRY_SIM_SEED=<seed>` replays one seed exactly (the decisions are
/// drawn from it; the run is sequential); `FERRY_SIM_SEEDS=<n>` and
/// `FERRY_SIM_SEED_BASE=<k>` run another range.
@Suite(.serialized) struct SimulationTests {
    static var seeds: [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        if let seed = environment["FERRY_SIM_SEED"].flatMap(UInt64.init) { return [seed] }
        let count = environment["FERRY_SIM_SEEDS"].flatMap(UInt64.init) ?? 200
        let base = environment["FERRY_SIM_SEED_BASE"].flatMap(UInt64.init) ?? 1
        return Array(base..<(base + count))
    }

    /// 200 seeds by default (about 70 s). Seeds 129, 131 and 132 found a
    /// bug, fixed since (`FailureTests.anEditAfterARejectedInsertSendsTheWholeRow`):
    /// an edit made after the server refused a row's creation was pushed
    /// alone and made a partial row there.
    @Test
    func replicasConvergeUnderFaultsOnSQLite() async throws {
        var failed: [UInt64] = []
        for seed in Self.seeds {
            do {
                try await Simulation(seed: seed).run()
            } catch {
                failed.append(seed)
                Issue.record("seed \(seed) failed: \(error)\nreplay: FERRY_SIM_SEED=\(seed) swift test --filter Simulation")
                if failed.count >= 3 { break }
            }
        }
        print("simulation: \(Self.seeds.count) seeds, \(failed.count) failed")
    }
}

/// One seeded run.
struct Simulation {
    let seed: UInt64
    var steps = 40

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// A device as the simulation drives it: reopened on restart.
    final class SimDevice {
        let name: String
        let user: String
        let path: String
        let files: URL
        var database: FerryDatabase
        var engine: SyncEngine
        init(name: String, user: String, path: String, files: URL, database: FerryDatabase, engine: SyncEngine) {
            self.name = name
            self.user = user
            self.path = path
            self.files = files
            self.database = database
            self.engine = engine
        }
    }

    func run() async throws {
        var random = SplitMix64(seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ 1)
        let policy = ConflictPolicy.allCases[Int(random.next() % UInt64(ConflictPolicy.allCases.count))]
        // Some writes are refused: a title ending in "!" never passes.
        let validator = MutationValidator { proposed in
            if case .text(let title)? = proposed.mutation.columns["title"], title.hasSuffix("!") { return .reject(reason: "no shouting") }
            return .accept
        }
        let tables = ServerTables(rules: ["note": TableRule(policy: policy, validator: validator),
                                          "item": TableRule(policy: policy)])
        let directory = try TemporaryDirectory()
        let server = try await SyncServer.start(tables: tables, in: directory)
        do {
            try await server.store.createScope("team:sim", owner: nil)
            for user in ["alice", "bob"] { try await server.store.setMember(user, role: .write, in: "team:sim") }
            try await simulate(server: server, directory: directory, random: &random)
            await server.stop()
        } catch {
            await server.stop()
            throw Failure(description: "policy \(policy): \(error)")
        }
    }

    private func open(_ name: String, user: String, server: SyncServer, directory: TemporaryDirectory,
                      faultSeed: UInt64?) async throws -> SimDevice {
        let path = directory.path("\(name).sqlite")
        let files = directory.url.appending(path: "\(name)-files")
        let database = try Self.database(path, files)
        let engine = try await Self.engine(database, user: user, server: server, faultSeed: faultSeed)
        return SimDevice(name: name, user: user, path: path, files: files, database: database, engine: engine)
    }

    static func database(_ path: String, _ files: URL) throws -> FerryDatabase {
        var configuration = FerryConfiguration()
        configuration.attachmentsDirectory = files
        return try FerryDatabase(path: path, schema: SyncSchema.schema(), configuration: configuration)
    }

    /// A sync engine for the device; with `faultSeed`, its network misbehaves.
    static func engine(_ database: FerryDatabase, user: String, server: SyncServer,
                       faultSeed: UInt64?) async throws -> SyncEngine {
        let faults = FaultInjectingTransport(wrapping: HTTPSyncTransport(baseURL: server.baseURL, requestTimeout: .seconds(10)))
        if let faultSeed {
            faults.injectRandomly([.dropRequest, .dropResponse, .duplicate, .reorder], on: .push, probability: 0.25, seed: faultSeed)
            faults.injectRandomly([.dropRequest, .dropResponse, .duplicate, .reorder], on: .pull, probability: 0.25, seed: faultSeed &+ 7)
        }
        var configuration = SyncConfiguration(userID: user, sharedScopes: ["team:sim"])
        configuration.retry = RetryPolicy(initialDelay: .milliseconds(1), maximumDelay: .milliseconds(5), attemptsPerSync: 3)
        configuration.periodicInterval = nil
        configuration.live = false
        configuration.pushBatchSize = 3
        configuration.pullPageSize = 4
        // Quiet: the faults are on purpose, and the step log tells a failing seed's story.
        var logger = Logger(label: "ferry.simulation")
        logger.logLevel = .critical
        let engine = try SyncEngine(database: database, transport: faults, configuration: configuration,
                                    token: try await server.token(user), logger: logger)
        return engine
    }

    /// Opens the device's file again (a restart) with a fresh engine.
    private func reopen(_ device: SimDevice, server: SyncServer, faultSeed: UInt64?) async throws {
        device.database = try Self.database(device.path, device.files)
        device.engine = try await Self.engine(device.database, user: device.user, server: server, faultSeed: faultSeed)
    }

    private func simulate(server: SyncServer, directory: TemporaryDirectory, random: inout SplitMix64) async throws {
        let count = 3 + Int(random.next() % 4)   // 3 to 6 devices
        var devices: [SimDevice] = []
        for index in 0..<count {
            devices.append(try await open("d\(index)", user: index % 2 == 0 ? "alice" : "bob", server: server, directory: directory,
                                          faultSeed: random.next()))
        }
        var log: [String] = []
        for step in 0..<steps {
            let device = devices[Int(random.next() % UInt64(devices.count))]
            let roll = random.next() % 100
            let table = random.next() % 2 == 0 ? "note" : "item"
            let row = "\(table)-\(random.next() % 4)"
            let value = "\(device.name)-\(step)\(random.next() % 10 == 0 ? "!" : "")"
            switch roll {
            case 0..<55:
                let op = try await write(device, table: table, row: row, value: value, delete: random.next() % 6 == 0)
                log.append("\(step) \(device.name) \(op)")
            case 55..<85:
                let outcome: String
                do {
                    let summary = try await device.engine.sync()
                    outcome = "pushed \(summary.pushed) pulled \(summary.pulled)"
                } catch {
                    outcome = "failed (\(error))"
                }
                log.append("\(step) \(device.name) sync: \(outcome)")
            default:
                try await reopen(device, server: server, faultSeed: random.next())
                log.append("\(step) \(device.name) restart")
            }
        }
        // Quiescence: the network heals; every device syncs until nothing moves.
        for device in devices { try await reopen(device, server: server, faultSeed: nil) }
        for _ in 0..<2 {
            for device in devices { _ = try await device.engine.sync() }
        }
        // What the server refused is set aside on its device, with its values,
        // until the app decides: here it gives up on each, and gets the server's row back.
        var rejected = 0
        for device in devices {
            for mutation in try device.database.outbox.rejectedMutations() {
                rejected += 1
                try device.database.outbox.discard(mutation)
            }
        }
        for _ in 0..<2 {
            for device in devices { _ = try await device.engine.sync() }
        }
        log.append("quiescence: \(rejected) rejected mutations discarded")
        try await check(devices, server: server, log: log)
    }

    /// One local write: an insert or re-creation when the row is not here,
    /// else an update of one column, or a delete.
    private func write(_ device: SimDevice, table: String, row: String, value: String, delete: Bool) async throws -> String {
        try await device.database.write { db in
            let exists = try Bool.fetchOne(db, sql: "SELECT 1 FROM \(table) WHERE id = ?", arguments: [row]) ?? false
            switch (table, exists, delete) {
            case (_, true, true):
                try db.execute(sql: "DELETE FROM \(table) WHERE id = ?", arguments: [row])
                return "delete \(row)"
            case ("note", false, _):
                try db.execute(sql: "INSERT INTO note(id, title, body) VALUES (?, ?, ?)", arguments: [row, value, value])
                return "insert \(row) \(value)"
            case ("note", true, _):
                let column = value.count % 2 == 0 ? "title" : "body"
                try db.execute(sql: "UPDATE note SET \(column) = ? WHERE id = ?", arguments: [value, row])
                return "update \(row).\(column) = \(value)"
            case (_, false, _):
                try db.execute(sql: "INSERT INTO item(id, listScope, name) VALUES (?, 'team:sim', ?)", arguments: [row, value])
                return "insert \(row) \(value)"
            default:
                try db.execute(sql: "UPDATE item SET name = ? WHERE id = ?", arguments: [value, row])
                return "update \(row).name = \(value)"
            }
        }
    }

    /// Every replica equals the server; nothing is left to send.
    private func check(_ devices: [SimDevice], server: SyncServer, log: [String]) async throws {
        let items = try await server.rows("item", in: "team:sim")
        for device in devices {
            let pending = try device.database.outbox.pendingCount()
            guard pending == 0 else { throw Failure(description: "\(device.name) still has \(pending) to send\n\(log.joined(separator: "\n"))") }
            let notes = try await server.rows("note", in: "user:\(device.user)")
            let local = try Self.rows(device.database, "SELECT id, title, body FROM note", columns: ["title", "body"])
            let expected = notes.mapValues { ["title": $0["title"] ?? .null, "body": $0["body"] ?? .null] }
            guard local == expected else {
                throw Failure(description: "\(device.name)'s notes differ from the server's:\n  device \(local)\n  server \(expected)\n\(log.joined(separator: "\n"))")
            }
            let localItems = try Self.rows(device.database, "SELECT id, name FROM item", columns: ["name"])
            let expectedItems = items.mapValues { ["name": $0["name"] ?? .null] }
            guard localItems == expectedItems else {
                throw Failure(description: "\(device.name)'s items differ from the server's:\n  device \(localItems)\n  server \(expectedItems)\n\(log.joined(separator: "\n"))")
            }
        }
    }

    static func rows(_ database: FerryDatabase, _ sql: String, columns: [String]) throws -> [String: [String: ColumnValue]] {
        try database.read { db in
            var rows: [String: [String: ColumnValue]] = [:]
            for row in try Row.fetchAll(db, sql: sql) {
                var values: [String: ColumnValue] = [:]
                for column in columns {
                    let value: String? = row[column]
                    values[column] = value.map(ColumnValue.text) ?? .null
                }
                rows[row["id"]] = values
            }
            return rows
        }
    }
}
