@_spi(Benchmarks) @testable import Ferry
import FerryTesting
import FerryProtocol
@testable import FerryServer
import FerryTestSupport
import Foundation
import GRDB
import Logging

/// One seeded run: 3 to 8 devices of two users, some sharing a scope,
/// insert, update, delete and re-create rows online and offline while the
/// network drops, delays, duplicates and reorders requests and replies,
/// servers and devices restart, the store is put back to an earlier
/// snapshot (a restored backup: the devices send back what it lost), a
/// device is put back to an old copy of its file, tombstone collection
/// forces resets, and an app update adding a
/// column reaches some devices first. Then the network heals, every device
/// syncs until nothing moves, and ``SimulationCheck`` holds the result
/// against the ledger of everything the servers acknowledged.
///
/// Every decision is drawn from the seed, the run is sequential, and its
/// time is simulated (``SimTime``: the devices' wall clocks, the engines'
/// clocks and sleeps, the servers' `now`), with the engines' jitter drawn
/// from the seed too, so a seed replays exactly: ``run()`` returns the
/// run's event log, steps and end state, and two runs of one seed return
/// the same bytes.
struct Simulation {
    let seed: UInt64
    let store: StoreKind
    var steps = 50
    /// How much time passes at each step.
    static let stepTime = Duration.milliseconds(10)

    /// The ids the simulation writes: four notes and four items.
    static let rowIDs = (0..<4).map { "note-\($0)" } + (0..<4).map { "item-\($0)" }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// A device as the simulation drives it: reopened on restart, upgrade
    /// and restore.
    final class Device {
        let name: String
        let user: String
        let path: String
        let files: URL
        var upgraded = false
        /// An old copy of the file, when one was taken.
        var backup: String?
        /// The file was put back to its old copy once.
        var restoredFromCopy = false
        var database: FerryDatabase!
        var engine: SyncEngine!

        init(name: String, user: String, path: String, files: URL) {
            self.name = name
            self.user = user
            self.path = path
            self.files = files
        }
    }

    /// The run's generator: the seed mixed first, so neighbouring seeds
    /// explore different runs. `FERRY_SIM_SEEDING=unmixed` seeds it as runs
    /// before the mixing did, so a seed reported then replays its scenario.
    static func generator(seed: UInt64) -> SplitMix64 {
        if ProcessInfo.processInfo.environment["FERRY_SIM_SEEDING"] == "unmixed" {
            return SplitMix64(seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ 1)
        }
        return SplitMix64(mixing: seed)
    }

    /// Runs the seed and checks it; returns its event log (see ``EventLog``).
    @discardableResult
    func run() async throws -> String {
        var random = Self.generator(seed: seed)
        let time = SimTime()
        // The jitter's own stream, so the scenario's draws stay those of the seed.
        let jitter = SimRandom(seed: seed ^ 0x6A77_6974_7465_7221)
        let policy = ConflictPolicy.allCases[Int(random.next() % UInt64(ConflictPolicy.allCases.count))]
        // Some writes are refused: a title ending in "!" never passes.
        let validator = MutationValidator { proposed in
            if case .text(let title)? = proposed.mutation.columns["title"], title.hasSuffix("!") { return .reject(reason: "no shouting") }
            return .accept
        }
        let tables = ServerTables(rules: [
            "note": TableRule(policy: policy, validator: validator),
            "item": TableRule(policy: policy),
        ])
        let directory = try TemporaryDirectory()
        let cluster = try await SimCluster.start(store, tables: tables, directory: directory, time: time)
        var log: [String] = ["seed \(seed), \(store), policy \(policy)"]
        do {
            try await cluster.store.createScope("team:sim", owner: nil)
            for user in ["alice", "bob"] { try await cluster.store.setMember(user, role: .write, in: "team:sim") }
            let devices = try await simulate(
                cluster: cluster, directory: directory, random: &random, log: &log,
                time: time, jitter: jitter)
            try await SimulationCheck(cluster: cluster, devices: devices, log: log).run()
            let events = try await EventLog.make(steps: log, devices: devices, cluster: cluster)
            await cluster.stop()
            return events
        } catch {
            await cluster.stop()
            if error is Failure { throw error }
            throw Failure(description: "\(error)\n\(log.joined(separator: "\n"))")
        }
    }

    private func simulate(
        cluster: SimCluster, directory: TemporaryDirectory, random: inout SplitMix64,
        log: inout [String], time: SimTime, jitter: SimRandom
    ) async throws -> [Device] {
        func open(_ device: Device, cluster: SimCluster, faultSeed: UInt64?) async throws {
            try await self.open(device, cluster: cluster, faultSeed: faultSeed, time: time, jitter: jitter)
        }
        let count = 3 + Int(random.next() % 6)  // 3 to 8 devices
        var devices: [Device] = []
        for index in 0..<count {
            let device = Device(
                name: "d\(index)", user: index % 2 == 0 ? "alice" : "bob",
                path: directory.path("d\(index).sqlite"), files: directory.url.appending(path: "d\(index)-files"))
            try await open(device, cluster: cluster, faultSeed: random.next())
            devices.append(device)
        }
        for step in 0..<steps {
            time.advance(by: Self.stepTime)
            let device = devices[Int(random.next() % UInt64(devices.count))]
            let roll = random.next() % 100
            switch roll {
            case 0..<50:
                let table = random.next() % 2 == 0 ? "note" : "item"
                let row = "\(table)-\(random.next() % 4)"
                let value = "\(device.name)-\(step)\(random.next() % 10 == 0 ? "!" : "")"
                let op = try await write(
                    device, table: table, row: row, value: value, delete: random.next() % 6 == 0,
                    choice: random.next())
                log.append("\(step) \(device.name) \(op)")
            case 50..<78:
                let outcome: String
                do {
                    let summary = try await device.engine.sync()
                    outcome = "pushed \(summary.pushed) pulled \(summary.pulled)\(summary.resets > 0 ? " reset" : "")\(summary.identityRenewed ? " new identity" : "")"
                } catch {
                    outcome = "failed (\(error))"
                }
                log.append("\(step) \(device.name) sync: \(outcome)")
            case 78..<84:
                try await open(device, cluster: cluster, faultSeed: random.next())
                log.append("\(step) \(device.name) restart")
            case 84..<86:
                let index = Int(random.next() % UInt64(cluster.instanceCount))
                try await cluster.restart(index)
                log.append("\(step) server \(index) restart")
            case 86..<88:
                // Once per run: the store is backed up, and later restored from that backup.
                if cluster.ledger.restore != nil {
                    log.append("\(step) \(device.name) idle")
                } else if devices.contains(where: { $0.restoredFromCopy }) {
                    log.append("\(step) \(device.name) idle")
                } else if cluster.hasSnapshot {
                    try await cluster.restoreSnapshot()
                    log.append("\(step) store restored from its snapshot (at v\(cluster.ledger.restore!.snapshotVersion))")
                } else {
                    try await cluster.takeSnapshot()
                    log.append("\(step) store snapshot taken at v\(try await cluster.version())")
                }
            case 88..<93 where cluster.ledger.restore != nil || cluster.hasSnapshot:
                // A device put back to an old copy after the store lost history may hold the
                // only copy of what the store lost, and drop it: no system can bring back a
                // value nothing holds. The two restores are kept to separate runs.
                log.append("\(step) \(device.name) idle")
            case 88..<93:
                if let backup = device.backup {
                    device.engine = nil
                    try device.database.close()
                    device.database = nil
                    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: device.path + suffix) }
                    try FileManager.default.copyItem(atPath: backup, toPath: device.path)
                    device.backup = nil
                    device.restoredFromCopy = true
                    try await open(device, cluster: cluster, faultSeed: random.next())
                    log.append("\(step) \(device.name) restored from its old copy")
                } else {
                    let backup = device.path + ".backup-\(step)"
                    try device.database.writer.backup(to: try DatabaseQueue(path: backup))
                    device.backup = backup
                    log.append("\(step) \(device.name) copied its file")
                }
            case 93..<95:
                let report = try await cluster.collectGarbage()
                log.append("\(step) server collects tombstones: \(report.tombstonesRemoved), horizon \(report.horizon)")
            default:
                if !device.upgraded {
                    device.upgraded = true
                    try await open(device, cluster: cluster, faultSeed: random.next())
                    log.append("\(step) \(device.name) upgraded: note.priority")
                } else {
                    log.append("\(step) \(device.name) idle")
                }
            }
        }
        // Quiescence: the network heals; every device syncs until nothing moves.
        for device in devices { try await open(device, cluster: cluster, faultSeed: nil) }
        for _ in 0..<2 {
            for device in devices {
                time.advance(by: Self.stepTime)
                _ = try await device.engine.sync()
            }
        }
        return devices
    }

    /// Opens the device's file (again, on a restart) with a fresh engine;
    /// with `faultSeed`, its network misbehaves.
    private func open(_ device: Device, cluster: SimCluster, faultSeed: UInt64?, time: SimTime, jitter: SimRandom) async throws {
        device.engine = nil
        device.database = nil
        var configuration = FerryConfiguration()
        configuration.attachmentsDirectory = device.files
        configuration.wallClock = time.wallClock
        device.database = try FerryDatabase(
            path: device.path, schema: SyncSchema.schema(withPriority: device.upgraded),
            configuration: configuration)
        let faults = FaultInjectingTransport(wrapping: cluster.router(seed: faultSeed ?? 0))
        if let faultSeed {
            // `resend`, not the concurrent `duplicate`: a copy whose order is drawn by the scheduler would not replay exactly.
            let kinds: [FaultInjectingTransport.Fault] = [.dropRequest, .dropResponse, .resend, .reorder, .delay(.milliseconds(3))]
            faults.injectRandomly(kinds, on: .push, probability: 0.25, seed: faultSeed)
            faults.injectRandomly(kinds, on: .pull, probability: 0.25, seed: faultSeed &+ 7)
        }
        var sync = SyncConfiguration(userID: device.user, sharedScopes: ["team:sim"])
        sync.retry = RetryPolicy(initialDelay: .milliseconds(1), maximumDelay: .milliseconds(5), attemptsPerSync: 3)
        sync.periodicInterval = nil
        sync.live = false
        sync.pushBatchSize = 3
        sync.pullPageSize = 4
        // Quiet: the faults are on purpose, and the step log tells a failing seed's story.
        var logger = Logger(label: "ferry.simulation")
        logger.logLevel = .critical
        device.engine = try SyncEngine(
            database: device.database, transport: faults, configuration: sync,
            token: try await cluster.token(device.user), tokenRefresher: nil, logger: logger,
            clock: time.clock, random: { jitter.unit() })
    }

    /// One local write: an insert or re-creation when the row is not here,
    /// else an update of one column, or a delete. An upgraded device also
    /// writes `note.priority`.
    private func write(_ device: Device, table: String, row: String, value: String, delete: Bool, choice: UInt64) async throws -> String {
        let upgraded = device.upgraded
        return try await device.database.write { db in
            let exists = try Bool.fetchOne(db, sql: "SELECT 1 FROM \(table) WHERE id = ?", arguments: [row]) ?? false
            switch (table, exists, delete) {
            case (_, true, true):
                try db.execute(sql: "DELETE FROM \(table) WHERE id = ?", arguments: [row])
                return "delete \(row)"
            case ("note", false, _) where upgraded:
                let priority = Int(choice % 5)
                try db.execute(sql: "INSERT INTO note(id, title, body, priority) VALUES (?, ?, ?, ?)", arguments: [row, value, value, priority])
                return "insert \(row) \(value) priority \(priority)"
            case ("note", false, _):
                try db.execute(sql: "INSERT INTO note(id, title, body) VALUES (?, ?, ?)", arguments: [row, value, value])
                return "insert \(row) \(value)"
            case ("note", true, _):
                if upgraded, choice % 3 == 0 {
                    let priority = Int(choice % 5)
                    try db.execute(sql: "UPDATE note SET priority = ? WHERE id = ?", arguments: [priority, row])
                    return "update \(row).priority = \(priority)"
                }
                let column = choice % 2 == 0 ? "title" : "body"
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
}
