@testable import Ferry
import FerryProtocol
import FerryTesting
import Foundation
import GRDB
import Synchronization
import Testing
import FerryTestSupport

/// A push batch taken while the one before it is on the wire
/// (`Outbox.takeBatch(limit:after:_:)`, `PushAhead`): it skips the batch in
/// flight, stops at that batch's rows, and loses nothing when it is dropped.
@Suite(.postgresTurns) struct PushAheadTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    private static func notes(_ count: Int, in database: FerryDatabase) throws {
        try database.write { db in
            for n in 0..<count { try db.execute(sql: "INSERT INTO note(id, title) VALUES (?, 'x')", arguments: ["n\(n)"]) }
        }
    }

    @Test func aBatchTakenAheadSkipsTheBatchOnTheWireAndStopsAtItsRows() throws {
        let database = try FerryDatabase(writer: DatabaseQueue(), schema: SyncSchema.schema())
        try Self.notes(6, in: database)
        let inFlight = try database.write { db in try database.outbox.takeBatch(limit: 3, db) }
        #expect(inFlight.map(\.rowID) == ["n0", "n1", "n2"])
        #expect(inFlight.map(\.mutationID) == [1, 2, 3])
        // Written while the batch is on the wire: an edit of a row in it, then a new row.
        try database.write { db in
            try db.execute(sql: "UPDATE note SET title = 'y' WHERE id = 'n1'")
            try db.execute(sql: "INSERT INTO note(id, title) VALUES ('n6', 'x')")
        }

        let ahead = try database.write { db in try database.outbox.takeBatch(limit: 10, after: inFlight, db) }
        #expect(ahead.map(\.rowID) == ["n3", "n4", "n5"], "up to n1's edit, which waits for the reply")
        #expect(ahead.map(\.mutationID) == [4, 5, 6])

        // The reply settles the batch on the wire; the batch taken ahead is dropped, not sent.
        try database.write { db in
            try Outbox.settle(inFlight.flatMap(\.entrySeqs), state: .acknowledged, reason: nil, now: 0, in: db)
        }
        let next = try database.write { db in try database.outbox.takeBatch(limit: 10, db) }
        #expect(next.map(\.rowID) == ["n3", "n4", "n5", "n1", "n6"])
        #expect(next.map(\.mutationID) == [4, 5, 6, 7, 8], "what was taken ahead goes first, with its ids")
        #expect(next[0].values == ahead[0].values)
    }

    @Test func aRowThatCancelsOutIsNotTakenAhead() throws {
        let database = try FerryDatabase(writer: DatabaseQueue(), schema: SyncSchema.schema())
        try Self.notes(2, in: database)
        let inFlight = try database.write { db in try database.outbox.takeBatch(limit: 1, db) }
        try database.write { db in
            try db.execute(sql: "INSERT INTO note(id, title) VALUES ('gone', 'x')")
            try db.execute(sql: "DELETE FROM note WHERE id = 'gone'")
        }
        #expect(try database.write { db in try database.outbox.takeBatch(limit: 10, after: inFlight, db) }.isEmpty)
        #expect(try database.outbox.pendingCount() == 2, "nothing taken, nothing discarded: the next batch does it")
        try database.write { db in
            try Outbox.settle(inFlight.flatMap(\.entrySeqs), state: .acknowledged, reason: nil, now: 0, in: db)
        }
        #expect(try database.write { db in try database.outbox.takeBatch(limit: 10, db) }.map(\.rowID) == ["n1"])
    }

    /// A reply that refuses a mutation forgets the ids taken ahead: the
    /// batch is taken again, with the edits made since in it.
    @Test func aReplyThatIsNotAPlainAcknowledgementForgetsTheBatchTakenAhead() async throws {
        let database = try FerryDatabase(writer: DatabaseQueue(), schema: SyncSchema.schema())
        try Self.notes(4, in: database)
        let inFlight = try await database.write { db in try database.outbox.takeBatch(limit: 2, db) }
        let ahead = try await database.write { db in try database.outbox.takeBatch(limit: 2, after: inFlight, db) }
        #expect(ahead.map(\.mutationID) == [3, 4])
        try await database.write { db in try db.execute(sql: "UPDATE note SET title = 'since' WHERE id = 'n2'") }

        let recorder = PushRecorder(database: database, userScope: "user:alice")
        let refused = PushResponse(
            lastAppliedMutationID: 2,
            results: [
                MutationResult(mutationID: 1, status: .applied, version: 1),
                MutationResult(mutationID: 2, status: .rejected, reason: "no"),
            ])
        let report = try await recorder.record(refused, for: inFlight, assignedUpTo: 2)
        #expect(report.forgotLaterIDs && report.rejected == 1)
        let next = try await database.write { db in try database.outbox.takeBatch(limit: 10, db) }
        #expect(next.map(\.rowID) == ["n2", "n3"])
        #expect(next.map(\.mutationID) == [3, 4])
        #expect(next[0].values["title"] == "since".databaseValue, "taken again, as the row stands now")

        // A plain acknowledgement keeps what was taken ahead.
        let later = try await database.write { db in try database.outbox.takeBatch(limit: 1, after: next, db) }
        #expect(later.isEmpty)
        let plain = PushResponse(
            lastAppliedMutationID: 4,
            results: [MutationResult(mutationID: 3, status: .applied, version: 2), MutationResult(mutationID: 4, status: .applied, version: 3)])
        #expect(try await !recorder.record(plain, for: next, assignedUpTo: 4).forgotLaterIDs)
    }

    /// A server that applied more than the batch's ids for this client (a
    /// copy of this database syncs elsewhere under the same id) sees a new
    /// identity, with the ids taken ahead numbered again, not settled.
    @Test func aRestoredCopyFoundByAReplyForgetsTheBatchTakenAhead() async throws {
        let database = try FerryDatabase(writer: DatabaseQueue(), schema: SyncSchema.schema())
        try Self.notes(4, in: database)
        let inFlight = try await database.write { db in try database.outbox.takeBatch(limit: 2, db) }
        _ = try await database.write { db in try database.outbox.takeBatch(limit: 2, after: inFlight, db) }
        let recorder = PushRecorder(database: database, userScope: "user:alice")
        let report = try await recorder.record(PushResponse(lastAppliedMutationID: 3, results: []), for: inFlight, assignedUpTo: 2)
        #expect(report.restoredFromBackup && report.forgotLaterIDs)
        #expect(try await database.read { db in try ClientIdentity.isRestoredCopy(serverLastApplied: 3, in: db) })
    }

    /// Random local writes during a drain (between each batch's take, the
    /// batch taken ahead and the reply), batches taken ahead or not, and
    /// some dropped: a server applying what is pushed in order ends with the
    /// device's rows, every push's ids rise past what it applied, and no
    /// outbox entry goes out under two ids.
    @Test(arguments: 0..<12 as Range<UInt64>)
    func aDrainTakingAheadSendsEveryEditOnceAndInOrder(seed: UInt64) throws {
        var random = SplitMix64(mixing: seed)
        let database = try FerryDatabase(writer: DatabaseQueue(), schema: SyncSchema.schema())
        let limit = Int.random(in: 1...6, using: &random)
        func write(_ count: Int) throws {
            try database.write { db in
                for _ in 0..<count {
                    let id = "n\(Int.random(in: 0..<12, using: &random))"
                    let title = "t\(Int.random(in: 0..<1000, using: &random))"
                    let exists = try Bool.fetchOne(db, sql: "SELECT 1 FROM note WHERE id = ?", arguments: [id]) ?? false
                    if !exists {
                        try db.execute(sql: "INSERT INTO note(id, title, body) VALUES (?, ?, 'b')", arguments: [id, title])
                    } else if Int.random(in: 0..<5, using: &random) == 0 {
                        try db.execute(sql: "DELETE FROM note WHERE id = ?", arguments: [id])
                    } else if Bool.random(using: &random) {
                        try db.execute(sql: "UPDATE note SET title = ? WHERE id = ?", arguments: [title, id])
                    } else {
                        try db.execute(sql: "UPDATE note SET body = ? WHERE id = ?", arguments: [title, id])
                    }
                }
            }
        }
        try write(30)
        var server: [String: [String: DatabaseValue]] = [:]
        var lastApplied: Int64 = 0
        var sentEntries: [Int64: Int64] = [:]
        var rounds = 0
        var inFlight = try database.write { db in try database.outbox.takeBatch(limit: limit, db) }
        while !inFlight.isEmpty {
            rounds += 1
            try #require(rounds < 500)
            if rounds < 40 { try write(Int.random(in: 0...2, using: &random)) }
            let ahead =
                Int.random(in: 0..<5, using: &random) > 0
                ? try database.write { db in try database.outbox.takeBatch(limit: limit, after: inFlight, db) } : []
            if rounds < 40 { try write(Int.random(in: 0...2, using: &random)) }
            // The server applies the batch, in id order.
            let ids = inFlight.compactMap(\.mutationID)
            #expect(ids == ids.sorted() && ids.count == inFlight.count)
            #expect(ids.first.map { $0 > lastApplied } ?? false, "a push's ids rise past what the server applied")
            for mutation in inFlight {
                for seq in mutation.entrySeqs {
                    #expect(sentEntries.updateValue(mutation.mutationID!, forKey: seq).map { $0 == mutation.mutationID } ?? true)
                }
                switch mutation.operation {
                case .delete: server[mutation.rowID] = nil
                case .upsert where mutation.columns == nil: server[mutation.rowID] = mutation.values
                case .upsert: server[mutation.rowID, default: [:]].merge(mutation.values) { $1 }
                }
                lastApplied = mutation.mutationID!
            }
            try database.write { db in
                try Outbox.settle(inFlight.flatMap(\.entrySeqs), state: .acknowledged, reason: nil, now: 0, in: db)
            }
            inFlight =
                !ahead.isEmpty && Int.random(in: 0..<6, using: &random) > 0
                ? ahead : try database.write { db in try database.outbox.takeBatch(limit: limit, db) }
        }
        let device = try database.read { db in
            try Row.fetchAll(db, sql: "SELECT id, title, body FROM note").reduce(into: [String: [String: DatabaseValue]]()) {
                $0[$1["id"]] = ["id": $1["id"], "title": $1["title"], "body": $1["body"]]
            }
        }
        #expect(server.mapValues { $0.filter { ["id", "title", "body"].contains($0.key) } } == device)
        #expect(try database.outbox.pendingCount() == 0)
    }

    /// The engine takes batches ahead in a long drain (batches of 50 here):
    /// while a push is on the wire, more than its 50 mutations are handed
    /// out. A row edited again after its batch was taken waits for that
    /// batch's reply, and another device ends with every row as written.
    @Test(arguments: StoreKind.available)
    func aDrainInManyBatchesArrivesWhole(kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let path = directory.path("writer.sqlite")
            let mostHandedOut = Mutex(0)
            let watch: @Sendable (PushRequest) async throws -> Void = { request in
                guard !request.mutations.isEmpty else { return }
                // The batch after this one is taken while this one is sent.
                try await Task.sleep(for: .milliseconds(100))
                var configuration = Configuration()
                configuration.readonly = true
                let count = try await DatabaseQueue(path: path, configuration: configuration).read(handedOutMutations)
                mostHandedOut.withLock { $0 = max($0, count) }
            }
            let writer = try await Device.make(
                "writer", user: "alice", server: server, directory: directory, configure: { $0.pushBatchSize = 50 },
                transport: { ForwardingTransport($0, willPush: watch) })
            let reader = try await Device.make("reader", user: "alice", server: server, directory: directory)
            try await writer.database.write { db in
                for n in 0..<520 {
                    try db.execute(sql: "INSERT INTO note(id, title) VALUES (?, ?)", arguments: ["n\(n)", "first \(n)"])
                    // Rows of earlier batches edited again, further down the outbox.
                    if n % 7 == 0, n >= 60 {
                        try db.execute(sql: "UPDATE note SET body = ? WHERE id = ?", arguments: ["again \(n)", "n\(n - 60)"])
                    }
                }
            }
            let summary = try await writer.engine.sync()
            #expect(summary.pushed == 520 + 66 && summary.conflicts == 0 && summary.rejected == 0)
            #expect(mostHandedOut.withLock { $0 } > 50, "a batch was taken ahead")
            #expect(try writer.database.outbox.pendingCount() == 0)
            try await reader.engine.sync()
            let query = "SELECT id, title, body FROM note ORDER BY id"
            let written = try await writer.database.read { db in try Row.fetchAll(db, sql: query) }
            #expect(written.count == 520)
            #expect(try await reader.database.read { db in try Row.fetchAll(db, sql: query) } == written)
        }
    }

    /// Each batch taken ahead in a drain goes out with the body the HTTP
    /// transport encoded (and gzipped, once the server showed it speaks
    /// gzip) while the batch before it was on the wire; the server applies
    /// every mutation once.
    @Test func aBatchTakenAheadGoesOutWithTheBodyEncodedAhead() async throws {
        try await SyncServer.with(.sqlite) { server in
            let sent = Mutex((prepared: 0, gzipped: 0))
            let writer = try await Device.make(
                "writer", user: "alice", server: server, directory: directory, configure: { $0.pushBatchSize = 50 },
                transport: {
                    var forwarding = ForwardingTransport($0)
                    forwarding.onPrepared = { prepared in
                        guard let json = prepared.json else { return }
                        #expect(json == Data(prepared.request.jsonText().utf8), "the body is the request, encoded")
                        sent.withLock {
                            $0.prepared += 1
                            if prepared.gzipped != nil { $0.gzipped += 1 }
                        }
                    }
                    return forwarding
                })
            let reader = try await Device.make("reader", user: "alice", server: server, directory: directory)
            try await writer.database.write { db in
                for n in 0..<300 {
                    try db.execute(sql: "INSERT INTO note(id, title, body) VALUES (?, ?, ?)", arguments: ["n\(n)", "title \(n)", "body \(n)"])
                }
            }
            let summary = try await writer.engine.sync()
            #expect(summary.pushed == 300 && summary.conflicts == 0 && summary.rejected == 0)
            // Six batches: every one after the first was taken ahead, and goes out prepared.
            #expect(sent.withLock { $0.prepared } == 5)
            #expect(sent.withLock { $0.gzipped } >= 4, "gzipped ahead once an answer came compressed")
            try await reader.engine.sync()
            #expect(try reader.notes() == writer.notes())
            #expect(try reader.notes().count == 300)
        }
    }

    /// The pending count the status shows while pushing is read beside the
    /// pushes, never between them: with every count held at its start until
    /// the test lets it go, the batches still go out one after another.
    /// (Counting 100k pending rows takes a tenth of a second, which the next
    /// batch used to wait for.)
    @Test func thePendingCountIsReadBesideThePushesNotBetweenThem() async throws {
        try await SyncServer.with(.sqlite) { server in
            // Pushes with mutations (the first sync's identity check is an empty one), and the counts
            // started when the last batch went out.
            let pushes = Mutex((batches: 0, countsAtLast: 0))
            let counts = Mutex(0)
            let release = DispatchSemaphore(value: 0)
            let writer = try await Device.make(
                "writer", user: "alice", server: server, directory: directory, configure: { $0.pushBatchSize = 50 },
                configureDatabase: {
                    // Called on the connection's own thread as a statement starts: the count (the one
                    // statement that reads `first_open`) waits there.
                    $0.sqlTrace = { sql in
                        guard sql.contains("first_open") else { return }
                        counts.withLock { $0 += 1 }
                        _ = release.wait(timeout: .now() + 20)
                        release.signal()
                    }
                },
                transport: {
                    ForwardingTransport(
                        $0,
                        willPush: { request in
                            guard !request.mutations.isEmpty else { return }
                            let started = counts.withLock { $0 }
                            pushes.withLock {
                                $0.batches += 1
                                if $0.batches == 6 { $0.countsAtLast = started }
                            }
                        })
                })
            let reader = try await Device.make("reader", user: "alice", server: server, directory: directory)
            try await writer.database.write { db in
                for n in 0..<300 { try db.execute(sql: "INSERT INTO note(id, title) VALUES (?, 'x')", arguments: ["n\(n)"]) }
            }
            let sync = Task { try await writer.engine.sync() }
            let wentOut = try await eventually(within: .seconds(10)) { pushes.withLock { $0.batches } >= 6 }
            let whileHeld = pushes.withLock { $0 }
            release.signal()
            let summary = try await sync.value
            #expect(wentOut, "all six batches went out while the count was held: \(whileHeld.batches) did")
            #expect(whileHeld.countsAtLast >= 1, "the count had started when the last batch went out")
            #expect(summary.pushed == 300 && summary.conflicts == 0 && summary.rejected == 0)
            #expect(writer.engine.status.pendingCount == 0)
            try await reader.engine.sync()
            #expect(try reader.notes() == writer.notes())
            #expect(try reader.notes().count == 300)
        }
    }

    /// A plain acknowledgement lets the batch taken ahead go out before
    /// the reply is recorded: with the device's writer held by another
    /// connection from the first reply on, the second push still reaches
    /// the server, and every row arrives once.
    @Test func theBatchTakenAheadGoesOutBeforeAPlainReplyIsRecorded() async throws {
        try await SyncServer.with(.sqlite) { server in
            let path = directory.path("writer.sqlite")
            let hold = WriterHold(path: path, handedOutBeyond: 50)
            let writer = try await Device.make(
                "writer", user: "alice", server: server, directory: directory, configure: { $0.pushBatchSize = 50 },
                transport: {
                    ForwardingTransport(
                        $0, willPush: { hold.pushed($0) }, didPush: { request, _ in try await hold.holdAfterFirstReply(request) })
                })
            let reader = try await Device.make("reader", user: "alice", server: server, directory: directory)
            try await writer.database.write { db in
                for n in 0..<200 { try db.execute(sql: "INSERT INTO note(id, title) VALUES (?, 'x')", arguments: ["n\(n)"]) }
            }
            let summary = try await writer.engine.sync()
            await hold.released()
            #expect(summary.pushed == 200 && summary.conflicts == 0 && summary.rejected == 0)
            #expect(hold.sentWhileHeld, "the second batch went out while the first reply waited for the writer")
            #expect(try writer.database.outbox.pendingCount() == 0)
            try await reader.engine.sync()
            #expect(try reader.notes() == writer.notes())
            #expect(try reader.notes().count == 200)
        }
    }
}

/// Holds the device's write lock from another connection once the first
/// push's reply is in (and the batch after it was taken ahead), until the
/// next push reaches the transport or three seconds pass.
private final class WriterHold: Sendable {
    private let path: String
    private let handedOutBeyond: Int
    private let state = Mutex<(pushes: Int, held: Bool, sentWhileHeld: Bool, release: Task<Void, Never>?)>((0, false, false, nil))

    init(path: String, handedOutBeyond: Int) {
        self.path = path
        self.handedOutBeyond = handedOutBeyond
    }

    var sentWhileHeld: Bool { state.withLock { $0.sentWhileHeld } }

    func pushed(_ request: PushRequest) {
        guard !request.mutations.isEmpty else { return }
        state.withLock { state in
            state.pushes += 1
            if state.held { state.sentWhileHeld = true }
        }
    }

    func holdAfterFirstReply(_ request: PushRequest) async throws {
        guard !request.mutations.isEmpty, state.withLock({ $0.pushes == 1 && $0.release == nil }) else { return }
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let blocker = try DatabaseQueue(path: path, configuration: configuration)
        // The batch after this one is taken ahead first: it is a write too.
        let deadline = ContinuousClock.now + .seconds(5)
        while try await blocker.read(handedOutMutations) <= handedOutBeyond, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        try await blocker.writeWithoutTransaction { db in try db.execute(sql: "BEGIN IMMEDIATE") }
        state.withLock { $0.held = true }
        let release = Task {
            let until = ContinuousClock.now + .seconds(3)
            while !state.withLock({ $0.sentWhileHeld }), ContinuousClock.now < until {
                try? await Task.sleep(for: .milliseconds(5))
            }
            state.withLock { $0.held = false }
            try? await blocker.writeWithoutTransaction { db in try db.execute(sql: "COMMIT") }
        }
        state.withLock { $0.release = release }
    }

    /// Waits until the hold is let go.
    func released() async {
        await state.withLock { $0.release }?.value
    }
}

/// The mutations a device's outbox holds handed out and not yet settled:
/// a batch taken (ahead or not) and not yet answered.
private func handedOutMutations(_ db: Database) throws -> Int {
    try Int.fetchOne(
        db,
        sql: """
            SELECT count(DISTINCT mutation_id) FROM ferry_outbox
            WHERE \(OutboxRecord.State.pending.condition) AND mutation_id IS NOT NULL
            """) ?? 0
}
