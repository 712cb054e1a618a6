@_spi(Benchmarks) @testable import Ferry
import FerryTesting
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// Two `ferry-server` processes on one PostgreSQL database: instances keep
/// nothing of their own, so clients may use either at any moment.
@Suite(.postgresTurns, .enabled(if: PostgresTestDatabase.shouldRun), .serialized)
struct ScaleOutTests {
    /// Three devices edit the same notes and sync, each request to an
    /// instance picked at random; afterwards every device, and a fresh one,
    /// holds the same rows.
    @Test func devicesSyncingThroughEitherInstanceConverge() async throws {
        let instances = try await ServerInstances.start()
        defer { instances.stop() }
        var devices: [Device] = []
        for index in 0..<3 {
            devices.append(try await instances.device("d\(index)", user: "alice", seed: UInt64(index + 1)))
        }
        var generator = SplitMix64(seed: 42)
        for round in 0..<8 {
            for (index, device) in devices.enumerated() {
                let choices = (0..<3).map { _ in (UInt64.random(in: 0...UInt64.max, using: &generator), Int.random(in: 0..<10, using: &generator)) }
                try await device.database.write { db in
                    try db.execute(sql: "INSERT INTO note (id, title, counter) VALUES (?, ?, ?)", arguments: ["d\(index)-r\(round)", "new", round])
                    let ids = try String.fetchAll(db, sql: "SELECT id FROM note ORDER BY id")
                    for (pick, action) in choices where !ids.isEmpty {
                        let id = ids[Int(pick % UInt64(ids.count))]
                        switch action {
                        case 0:
                            try db.execute(sql: "DELETE FROM note WHERE id = ?", arguments: [id])
                        case 1...4:
                            try db.execute(sql: "UPDATE note SET title = ? WHERE id = ?", arguments: ["t\(index).\(round)", id])
                        default:
                            try db.execute(sql: "UPDATE note SET body = ?, counter = counter + 1 WHERE id = ?", arguments: ["b\(index).\(round)", id])
                        }
                    }
                }
            }
            for device in devices.shuffled(using: &generator) {
                try await device.engine.sync()
            }
        }
        // Two quiet rounds carry the last edits everywhere.
        for _ in 0..<2 {
            for device in devices { try await device.engine.sync() }
        }
        let reference = try devices[0].notes()
        #expect(reference.count > 10)
        for device in devices.dropFirst() {
            #expect(try device.notes() == reference)
        }
        let fresh = try await instances.device("fresh", user: "alice", seed: 99)
        try await fresh.engine.sync()
        #expect(try fresh.notes() == reference)
        let pending = try await devices[0].engine.status.pendingCount
        #expect(pending == 0)
    }

    /// The same push, sent 1,000 times at once to both instances, applies
    /// once: one answer applies it, every other one is a replay, and the
    /// database holds each mutation's result and row once.
    @Test func theSamePushSentAThousandTimesToBothInstancesAppliesOnce() async throws {
        // A storm from one user, far past the default push rate, which is not under test here.
        let instances = try await ServerInstances.start(arguments: ["--push-rate", "off"])
        defer { instances.stop() }
        let transports = instances.transports
        let token = try instances.token("alice")
        let stamp = HLCTimestamp(wallMilliseconds: Int64(Date().timeIntervalSince1970 * 1000), counter: 0)
        let push = PushRequest(
            clientID: "burst",
            mutations: (1...5).map { id in
                Mutation(
                    mutationID: Int64(id), table: "note", rowID: "n\(id)", scope: "user:alice", operation: .upsert,
                    columns: ["title": .text("once \(id)"), "counter": .integer(Int64(id))], baseVersion: nil, hlc: stamp)
            })
        let responses = try await withThrowingTaskGroup(of: PushResponse.self) { group in
            for attempt in 0..<1000 {
                let transport = transports[attempt % transports.count]
                group.addTask {
                    // A client retries what the server could not take (503) or the
                    // network lost; any other failure (a 500) fails the test.
                    for retry in 0..<50 {
                        do {
                            return try await transport.push(push, token: token)
                        } catch  where retry < 49 && Self.isTransient(error) {
                            try await Task.sleep(for: .milliseconds(20))
                        }
                    }
                    throw Missing()
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(responses.count == 1000)
        #expect(responses.allSatisfy { $0.lastAppliedMutationID == 5 })
        let applied = responses.filter { $0.results.contains { !$0.replayed } }
        #expect(applied.count == 1)
        #expect(applied.first?.results.map(\.status) == Array(repeating: .applied, count: 5))
        let versions: [Int64] = (applied.first?.results ?? []).compactMap { $0.version }
        #expect(versions.count == 5)
        #expect(responses.allSatisfy { response in response.results.compactMap { $0.version } == versions })

        let database = instances.database
        #expect(try await database.rows("SELECT count(*)::text FROM ferry_recorded_results WHERE client_id = 'burst'") == ["5"])
        #expect(try await database.rows("SELECT last_mutation_id::text FROM ferry_clients WHERE client_id = 'burst'") == ["5"])
        #expect(
            try await database.rows("SELECT row_id || '@' || version FROM ferry_rows ORDER BY row_id")
                == zip(1...5, versions).map { "n\($0)@\($1)" })
        #expect(try await database.rows("SELECT count(*)::text FROM ferry_conflicts") == ["0"])
        #expect(try await database.rows("SELECT count(*)::text FROM ferry_history") == ["0"])
    }

    /// A device listening on instance B hears of a push made on instance A
    /// (PostgreSQL `NOTIFY`), and pulls the row, with no periodic sync.
    @Test func aPushOnOneInstanceReachesALiveClientOnTheOther() async throws {
        let instances = try await ServerInstances.start()
        defer { instances.stop() }
        let writer = try await Device.make(
            "writer", user: "alice", baseURL: instances.urls[0], directory: instances.directory,
            token: try instances.token("alice"))
        let listener = try await Device.make(
            "listener", user: "alice", baseURL: instances.urls[1], directory: instances.directory,
            configure: { $0.live = true }, token: try instances.token("alice"))
        await listener.engine.start()
        defer { Task { await listener.engine.stop() } }
        try #require(try await eventually(within: .seconds(10)) { await listener.engine.status.liveConnected })

        var latencies: [Duration] = []
        for index in 0..<5 {
            try writer.execute("INSERT INTO note (id, title) VALUES (?, ?)", ["live-\(index)", "from A"])
            let started = ContinuousClock.now
            try await writer.engine.sync()
            try #require(try await eventually(within: .seconds(10)) { (try? listener.note("live-\(index)")) != nil })
            latencies.append(ContinuousClock.now - started)
        }
        print("push on A → row on a device live on B: \(latencies)")
        #expect(try listener.note("live-4") == Note(title: "from A", body: nil, counter: 0))
    }

    /// PostgreSQL crashes and restarts (`pg_ctl restart -m immediate`) while
    /// a device pushes 1,500 rows through both instances: the sync rides
    /// through on retries, every acknowledged mutation is in the database,
    /// and both instances serve again.
    @Test(.enabled(if: PostgresTestDatabase.canControlCluster || PostgresTestDatabase.isRequired))
    func postgresRestartedUnderLoadLosesNoAcknowledgedMutation() async throws {
        let instances = try await ServerInstances.start()
        defer { instances.stop() }
        let device = try await instances.device("loader", user: "alice", seed: 7) {
            $0.pushBatchSize = 25
            $0.retry = RetryPolicy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(500), attemptsPerSync: 400)
        }
        try await device.database.write { db in
            for index in 0..<1500 {
                try db.execute(sql: "INSERT INTO note (id, title, counter) VALUES (?, ?, ?)", arguments: ["n\(index)", "t\(index)", index])
            }
        }
        let startedBefore = try await instances.database.rows("SELECT pg_postmaster_start_time()::text")
        let sync = Task { try await device.engine.sync() }
        try #require(try await eventually(within: .seconds(60)) { ((try? acknowledged(device)) ?? 0) >= 200 })
        try PostgresTestDatabase.controlCluster("restart", "-m", "immediate")
        let atRestart = try acknowledged(device)

        let summary = try await sync.value
        #expect(atRestart < 1500)
        // The restart happened under load: PostgreSQL's start time moved.
        // Requests caught in it either waited for a new connection or got a
        // 503 and were retried (the retry count depends on timing).
        #expect(try await instances.database.rows("SELECT pg_postmaster_start_time()::text") != startedBefore)
        print("PostgreSQL restarted after \(atRestart) of 1500 acknowledged; the sync retried \(summary.retries) times")
        #expect(try acknowledged(device) == 1500)
        let database = instances.database
        #expect(try await database.rows("SELECT count(*)::text FROM ferry_rows") == ["1500"])
        #expect(try await database.rows("SELECT count(*)::text FROM ferry_recorded_results") == ["1500"])

        // Both instances serve: a fresh device reads every row through them.
        let reader = try await instances.device("reader", user: "alice", seed: 8)
        try await reader.engine.sync()
        let notes = try reader.notes()
        #expect(notes.count == 1500)
        #expect(notes["n1499"] == Note(title: "t1499", body: nil, counter: 1499))
    }

    static func isTransient(_ error: any Error) -> Bool {
        switch error as? SyncTransportError {
        case .http(status: 503, _, _), .unreachable, .timedOut: true
        default: false
        }
    }

    private func acknowledged(_ device: Device) throws -> Int {
        try device.database.read { db in
            try Int.fetchOne(db, sql: "SELECT count(DISTINCT mutation_id) FROM ferry_outbox WHERE state = 'acknowledged'") ?? 0
        }
    }
}
