@testable import Ferry
import FerryProtocol
import Foundation
import GRDB
import GRDBSQLite
import Testing
import FerryTestSupport

@Suite struct OutboxTests {
    @Test func pendingMutationsCarryTheRowsCurrentValues() throws {
        let database = try NotesAndTasks.inMemory()
        try database.write { db in
            try db.execute(sql: "INSERT INTO note(id, title, body, data) VALUES ('n1', 'a', 'b', x'0102')")
            try db.execute(sql: "UPDATE note SET title = 'a2' WHERE id = 'n1'")
            try db.execute(sql: "INSERT INTO task(id, listScope) VALUES ('t1', 'list:x')")
            try db.execute(sql: "UPDATE task SET done = 1 WHERE id = 't1'")
        }
        try database.writeWithoutCapture { db in
            try db.execute(sql: "INSERT INTO note(id, title, body) VALUES ('n2', 'server', 'copy')")
            try db.execute(sql: "INSERT INTO ferry_rows(tbl, row_id, version) VALUES ('note', 'n2', 10)")
        }
        try database.write { db in try db.execute(sql: "UPDATE note SET body = 'mine' WHERE id = 'n2'") }

        let mutations = try database.outbox.pendingMutations()
        #expect(mutations.map(\.rowID) == ["n1", "t1", "n2"])
        #expect(mutations[0].values["title"] == "a2".databaseValue)
        #expect(mutations[0].values["data"] == Data([1, 2]).databaseValue)
        #expect(mutations[0].values.count == 5)
        #expect(mutations[1].scope == "list:x")
        // An update sends only its changed columns (and the key), on the base it was made on.
        #expect(mutations[2].values == ["id": "n2".databaseValue, "body": "mine".databaseValue])
        #expect(mutations[2].baseVersion == 10)
        #expect(try database.outbox.pendingCount() == 3)
    }

    @Test func entriesAreReadThroughTheirRecordWithAKnownState() throws {
        let database = try NotesAndTasks.inMemory()
        try database.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES ('n1', 'a')") }
        try database.read { db in
            let record = try #require(try OutboxRecord.fetchOne(db))
            #expect(record.state == .pending)
            #expect(record.entry.operation == .insert && record.entry.rowID == "n1")
        }
        try database.outbox.markRejected(try database.outbox.nextBatch(limit: 1)[0], reason: "no")
        #expect(try database.read { db in try OutboxRecord.fetchOne(db)?.state } == .rejected)
        // A state Ferry never writes is reported, not read as something else.
        try database.writeWithoutCapture { db in try db.execute(sql: "UPDATE ferry_outbox SET state = 'limbo'") }
        #expect {
            _ = try database.read { db in try OutboxRecord.fetchAll(db) }
        } throws: { error in
            (error as? FerryError)?.code == .outboxStateMismatch && "\(error)".contains("limbo")
        }
    }

    @Test func batchesGetStrictlyIncreasingIdsAndAreResentUnchanged() throws {
        let database = try NotesAndTasks.inMemory()
        for n in 0..<5 {
            try database.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES (?, 'x')", arguments: ["n\(n)"]) }
        }
        let first = try database.outbox.nextBatch(limit: 3)
        #expect(first.map(\.mutationID) == [1, 2, 3])
        // Edits after the batch was handed out do not join it.
        try database.write { db in try db.execute(sql: "UPDATE note SET title = 'later' WHERE id = 'n0'") }
        let retry = try database.outbox.nextBatch(limit: 3)
        #expect(retry.map(\.mutationID) == [1, 2, 3])
        #expect(retry.map(\.entrySeqs) == first.map(\.entrySeqs))
        // With the values they were frozen with, kept on each mutation's entry until it settles.
        #expect(retry.map(\.values) == first.map(\.values))
        #expect(retry[0].values["title"] == "x".databaseValue)
        #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT count(frozen) FROM ferry_outbox") } == 3)
        try database.outbox.markAcknowledged(retry)
        #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT count(frozen) FROM ferry_outbox") } == 0)
        let next = try database.outbox.nextBatch(limit: 10)
        #expect(next.map(\.mutationID) == [4, 5, 6])
        #expect(next.map(\.rowID) == ["n3", "n4", "n0"])
        #expect(next[2].columns == ["title"])
    }

    @Test func aHandedOutMutationIsNeverSplitByASmallerBatch() throws {
        let database = try NotesAndTasks.inMemory()
        try database.write { db in
            try db.execute(sql: "INSERT INTO note(id, title) VALUES ('a', 'x')")
            try db.execute(sql: "INSERT INTO note(id, title) VALUES ('b', 'x')")
            try db.execute(sql: "UPDATE note SET body = 'more' WHERE id = 'a'")
        }
        let first = try database.outbox.nextBatch(limit: 10)
        #expect(first.map(\.entrySeqs) == [[1, 3], [2]])
        // A retry with a smaller batch still resends mutation 1 whole.
        let retry = try database.outbox.nextBatch(limit: 1)
        #expect(retry.map(\.mutationID) == [1])
        #expect(retry.map(\.entrySeqs) == [[1, 3]])
        #expect(retry[0].values["body"] == "more".databaseValue)
    }

    /// A database written before the payloads moved onto the entries
    /// (`ferry_frozen`, one row per mutation) resends what it froze there.
    @Test func payloadsFrozenInTheirOwnTableAreResentAfterTheUpgrade() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("old.sqlite")
        var first: [PendingMutation] = []
        do {
            let database = try FerryDatabase(path: path, schema: NotesAndTasks.schema)
            try database.write { db in
                try db.execute(sql: "INSERT INTO note(id, title) VALUES ('a', 'x')")
                try db.execute(sql: "INSERT INTO note(id, title) VALUES ('b', 'x')")
                try db.execute(sql: "UPDATE note SET body = 'more' WHERE id = 'a'")
            }
            first = try database.outbox.nextBatch(limit: 10)
            #expect(first.map(\.entrySeqs) == [[1, 3], [2]])
            try database.write { db in try db.execute(sql: "UPDATE note SET title = 'later' WHERE id = 'a'") }
            // The layout before `ferry.v10.frozen-in-outbox`.
            try database.writeWithoutCapture { db in
                try db.execute(
                    sql: """
                        CREATE TABLE ferry_frozen (mutation_id INTEGER PRIMARY KEY, payload TEXT NOT NULL);
                        INSERT INTO ferry_frozen(mutation_id, payload) SELECT mutation_id, frozen FROM ferry_outbox WHERE frozen IS NOT NULL;
                        ALTER TABLE ferry_outbox DROP COLUMN frozen;
                        DELETE FROM ferry_migrations WHERE identifier = 'ferry.v10.frozen-in-outbox';
                        """)
            }
            #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM ferry_frozen") } == 2)
            try database.close()
        }
        let database = try FerryDatabase(path: path, schema: NotesAndTasks.schema)
        #expect(try database.read { db in try db.tableExists("ferry_frozen") } == false)
        // On each mutation's first entry, resent as frozen: not the later title.
        #expect(try database.read { db in try Int64.fetchAll(db, sql: "SELECT seq FROM ferry_outbox WHERE frozen IS NOT NULL") } == [1, 2])
        let retry = try database.outbox.nextBatch(limit: 2)
        #expect(retry.map(\.mutationID) == first.map(\.mutationID))
        #expect(retry.map(\.values) == first.map(\.values))
        #expect(retry[0].values["title"] == "x".databaseValue)
        try database.outbox.markAcknowledged(retry)
        // The later edit, taken now, carries the later title.
        #expect(try database.outbox.nextBatch(limit: 10).map { $0.values["title"] } == ["later".databaseValue])
    }

    @Test func anInsertDeletedBeforeAnyPushIsDroppedFromTheOutbox() throws {
        let database = try NotesAndTasks.inMemory()
        try database.write { db in
            try db.execute(sql: "INSERT INTO note(id, title) VALUES ('gone', 'x')")
            try db.execute(sql: "INSERT INTO note(id, title) VALUES ('kept', 'x')")
            try db.execute(sql: "DELETE FROM note WHERE id = 'gone'")
        }
        #expect(try database.outbox.pendingCount() == 1)
        let batch = try database.outbox.nextBatch(limit: 10)
        #expect(batch.map(\.rowID) == ["kept"])
        let remaining = try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM ferry_outbox") }
        #expect(remaining == 1)
    }

    @Test func aRejectedMutationIsSetAsideAndDoesNotBlockTheOthers() throws {
        let database = try NotesAndTasks.inMemory()
        try database.write { db in
            try db.execute(sql: "INSERT INTO note(id, title) VALUES ('bad', 'x')")
            try db.execute(sql: "INSERT INTO note(id, title) VALUES ('good', 'y')")
        }
        let batch = try database.outbox.nextBatch(limit: 10)
        try database.outbox.markRejected(batch[0], reason: "title too short")
        try database.outbox.markAcknowledged([batch[1]])
        #expect(try database.outbox.pendingCount() == 0)
        let rejected = try database.outbox.rejectedEntries()
        #expect(rejected.map(\.entry.rowID) == ["bad"])
        #expect(rejected.map(\.reason) == ["title too short"])
        try database.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES ('after', 'z')") }
        #expect(try database.outbox.nextBatch(limit: 10).map(\.rowID) == ["after"])
        // Settling twice is an error, not a silent no-op.
        #expect(throws: FerryError.self) { try database.outbox.markAcknowledged([batch[1]]) }
    }

    @Test func purgeKeepsWhatTheRetentionPolicySays() throws {
        let clock = ManualClock(1_000_000)
        var configuration = FerryConfiguration()
        configuration.wallClock = clock
        let database = try NotesAndTasks.inMemory(configuration: configuration)
        try database.write { db in
            for id in ["a", "b", "c"] { try db.execute(sql: "INSERT INTO note(id, title) VALUES (?, 'x')", arguments: [id]) }
        }
        let batch = try database.outbox.nextBatch(limit: 10)
        try database.outbox.markAcknowledged([batch[0]])
        try database.outbox.markRejected(batch[1], reason: "no")
        let retention = OutboxRetention(acknowledged: .seconds(60), rejected: .seconds(3600))
        #expect(try database.outbox.purge(retention: retention) == 0)
        clock.advance(61_000)
        #expect(try database.outbox.purge(retention: retention) == 1)
        #expect(try database.outbox.rejectedEntries().count == 1)
        clock.advance(3_600_000)
        #expect(try database.outbox.purge(retention: retention) == 1)
        // The pending entry is never purged.
        #expect(try database.outbox.pendingCount() == 1)
    }

    /// "Pending" is rows with changes not yet acknowledged, in the outbox
    /// and in the engine's status alike: a row edited many times, or with a
    /// mutation handed out and an edit after it, counts once; a row
    /// inserted and deleted before any push counts not at all.
    @Test func pendingCountsRowsOnce() throws {
        let database = try NotesAndTasks.inMemory()
        try database.write { db in
            try db.execute(sql: "INSERT INTO note(id, title) VALUES ('a', 'x')")
            try db.execute(sql: "UPDATE note SET title = 'y' WHERE id = 'a'")
            try db.execute(sql: "INSERT INTO note(id, title) VALUES ('b', 'x')")
        }
        #expect(try database.outbox.pendingCount() == 2)
        _ = try database.outbox.nextBatch(limit: 10)
        try database.write { db in try db.execute(sql: "UPDATE note SET title = 'z' WHERE id = 'a'") }
        #expect(try database.outbox.pendingMutations().count == 3, "a handed-out mutation is never merged with later edits")
        #expect(try database.outbox.pendingCount() == 2)
        // Handed out, then deleted: the delete must still be pushed.
        try database.write { db in try db.execute(sql: "DELETE FROM note WHERE id = 'b'") }
        #expect(try database.outbox.pendingCount() == 2)
        // Never pushed, then deleted: nothing to send; re-created: something again.
        try database.write { db in
            try db.execute(sql: "INSERT INTO note(id, title) VALUES ('c', 'x')")
            try db.execute(sql: "DELETE FROM note WHERE id = 'c'")
        }
        #expect(try database.outbox.pendingCount() == 2)
        try database.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES ('c', 'again')") }
        #expect(try database.outbox.pendingCount() == 3)
    }

    /// Acknowledged entries stay until the app purges them: a drain of 100k
    /// edits left 100k of them, and each batch, each pulled page's rebase and
    /// each "anything left?" read all of them before the pending ones. Every
    /// statement of those that picks entries by state finds them through an
    /// index of that state (or by their numbers), never by reading the
    /// whole outbox.
    @Test func theSyncsReadsOfPendingEntriesNeverReadTheWholeOutbox() throws {
        let database = try NotesAndTasks.inMemory()
        try database.write { db in
            for n in 0..<6 { try db.execute(sql: "INSERT INTO note(id, title) VALUES (?, 'x')", arguments: ["n\(n)"]) }
        }
        try database.outbox.markAcknowledged(try database.outbox.nextBatch(limit: 3))
        // An edit of some columns on no known version: taking it asks whether the server refused the row.
        try database.write { db in try db.execute(sql: "UPDATE note SET title = 'y' WHERE id = 'n0'") }

        let plans = try database.write { db in
            try Self.plansOfStatementsPickingByState(db) {
                let batch = try database.outbox.takeBatch(limit: 10, db)
                #expect(batch.map(\.rowID) == ["n3", "n4", "n5", "n0"])
                #expect(try Outbox.pendingEdits(db).count == 4)
                #expect(try Outbox.pendingEdits(db, of: RowKey(table: "note", rowID: "n0")).count == 1)
                #expect(try !Outbox.nothingToPush(db))
                #expect(try Outbox.pendingCount(db) == 4)
                #expect(try Outbox.rejectedCount(db) == 0)
                try Outbox.settle(batch.flatMap(\.entrySeqs), state: .acknowledged, reason: nil, now: 0, in: db)
                try Outbox.forgetHandedOut(after: 0, in: db)
            }
        }
        #expect(plans.count >= 8)
        for (sql, plan) in plans {
            #expect(plan.contains { $0.contains("ferry_outbox_pending") || $0.contains("ferry_outbox_rejected") || $0.contains("INTEGER PRIMARY KEY") }, "\(sql)\n\(plan)")
            #expect(Self.fullScans(plan).isEmpty, "\(sql)\n\(plan)")
        }
    }

    /// Statistics taken while most entries were pending (an offline backlog,
    /// then `PRAGMA optimize` or the app's `ANALYZE`) rate the index of
    /// pending entries no better than the table; once the entries settle,
    /// the sync's reads still go through the index.
    @Test func theSyncsReadsOfPendingEntriesKeepTheirIndexWhateverTheStatistics() throws {
        let database = try NotesAndTasks.inMemory()
        try database.write { db in
            for n in 0..<6 { try db.execute(sql: "INSERT INTO note(id, title) VALUES (?, 'x')", arguments: ["n\(n)"]) }
        }
        try database.outbox.markAcknowledged(try database.outbox.nextBatch(limit: 5))
        // As ANALYZE leaves them after a backlog of 100k: every entry pending.
        try database.writeWithoutCapture { db in
            try db.execute(
                sql: """
                    ANALYZE;
                    DELETE FROM sqlite_stat1 WHERE tbl = 'ferry_outbox';
                    INSERT INTO sqlite_stat1(tbl, idx, stat) VALUES ('ferry_outbox', NULL, '100000'),
                        ('ferry_outbox', 'ferry_outbox_pending', '100000 1');
                    ANALYZE sqlite_schema;
                    """)
        }
        let plans = try database.write { db in
            try Self.plansOfStatementsPickingByState(db) { () throws in
                #expect(try database.outbox.takeBatch(limit: 10, db).map(\.rowID) == ["n5"])
                #expect(try Outbox.pendingEdits(db).count == 1)
                #expect(try !Outbox.nothingToPush(db))
                #expect(try Outbox.pendingCount(db) == 1)
            }
        }
        #expect(plans.count >= 4)
        for (sql, plan) in plans {
            #expect(Self.fullScans(plan).isEmpty, "\(sql)\n\(plan)")
        }
    }

    /// Runs `body` and returns the query plan (`EXPLAIN QUERY PLAN`, one line
    /// per step) of each statement it ran that picks outbox entries by state.
    private static func plansOfStatementsPickingByState(_ db: Database, _ body: () throws -> Void) throws -> [(String, [String])] {
        final class Statements: @unchecked Sendable { var sql: [String] = [] }
        let seen = Statements()
        db.trace { event in
            if case .statement(let statement) = event { seen.sql.append(statement.sql) }
        }
        defer { db.trace(options: []) }
        try body()
        // GRDB quotes the column it writes (`"state" = ?`).
        let picking = seen.sql.filter { $0.contains("ferry_outbox") && $0.range(of: #"\bstate"?\s*="#, options: .regularExpression) != nil }
        return try picking.map { sql in
            let explain = try db.makeStatement(sql: "EXPLAIN QUERY PLAN " + sql)
            let unbound = StatementArguments(Array(repeating: DatabaseValue.null, count: Int(sqlite3_bind_parameter_count(explain.sqliteStatement))))
            return (sql, try Row.fetchAll(explain, arguments: unbound).map { $0["detail"] as String })
        }
    }

    /// The steps of a plan that read the whole outbox (`SCAN ferry_outbox`,
    /// or an alias the sync's statements give it; `SCAN TABLE …` before
    /// SQLite 3.36), not an index of it.
    private static func fullScans(_ plan: [String]) -> [String] {
        plan.filter { $0.range(of: #"^SCAN (TABLE )?(ferry_outbox|o|first|last)$"#, options: .regularExpression) != nil }
    }

    @Test func thePendingCountIsObservable() async throws {
        let database = try NotesAndTasks.inMemory()
        var counts: [Int] = []
        for try await count in database.outbox.observePendingCount() {
            counts.append(count)
            if count == 0 && counts.count == 1 {
                try await database.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES ('a', 'x')") }
            } else if count == 1 {
                try await database.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES ('b', 'x')") }
            } else if count == 2 {
                let batch = try database.outbox.nextBatch(limit: 10)
                try database.outbox.markAcknowledged(batch)
            } else {
                break
            }
            if counts.count > 10 { break }
        }
        #expect(counts == [0, 1, 2, 0])
    }

    @Test func theEditClockResumesAfterRestartEvenWhenTheWallClockWentBack() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("app.sqlite")
        let clock = ManualClock(5_000_000)
        var configuration = FerryConfiguration()
        configuration.wallClock = clock
        var stamps: [HLCTimestamp] = []
        do {
            let database = try FerryDatabase(path: path, schema: NotesAndTasks.schema, configuration: configuration)
            try database.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES ('a', 'x')") }
            stamps += try database.outbox.pendingMutations().map(\.hlc)
            // Pushed, acknowledged and purged: the stamp survives in ferry_meta.
            try database.outbox.markAcknowledged(try database.outbox.nextBatch(limit: 10))
            try database.outbox.purge()
        }
        clock.set(1_000)  // an hour and more backwards
        let reopened = try FerryDatabase(path: path, schema: NotesAndTasks.schema, configuration: configuration)
        try reopened.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES ('b', 'x')") }
        stamps += try reopened.outbox.pendingMutations().map(\.hlc)
        #expect(stamps.count == 2)
        #expect(stamps[1] > stamps[0])
        #expect(stamps[1].wallMilliseconds == 5_000_000)
    }

    @Test func batchLimitMustBePositive() throws {
        let database = try NotesAndTasks.inMemory()
        #expect(throws: FerryError.self) { try database.outbox.nextBatch(limit: 0) }
    }
}
