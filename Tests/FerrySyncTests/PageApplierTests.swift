@testable import Ferry
import FerryProtocol
import FerryTesting
import Foundation
import GRDB
import Testing

/// Applying pulled pages to a real database, without a server.
@Suite struct PageApplierTests {
    let database: FerryDatabase

    init() throws {
        database = try FerryDatabase(writer: DatabaseQueue(), schema: SyncSchema.schema())
    }

    private func applier() -> PageApplier {
        PageApplier(database: database, userScope: "user:alice")
    }

    private func page(_ changes: [RowChange], cursor: String = "c1", hasMore: Bool = false) -> PullPage {
        PullPage(scope: "user:alice", changes: changes, cursor: cursor, hasMore: hasMore, reset: false)
    }

    private func note(_ id: String, version: Int64, title: String, body: String, counter: Int64 = 0) -> RowChange {
        RowChange(
            table: "note", rowID: id, version: version, deleted: false,
            values: ["id": .text(id), "title": .text(title), "body": .text(body), "counter": .integer(counter)])
    }

    @Test func appliesWithoutEchoAndRecordsVersionsAndCursor() throws {
        let report = try applier().apply(page([note("1", version: 3, title: "a", body: "b"), note("2", version: 4, title: "c", body: "d")]))
        #expect(report.written == 2)
        #expect(try database.outbox.pendingCount() == 0)
        let versions = try database.read { db in try Int64.fetchAll(db, sql: "SELECT version FROM ferry_rows ORDER BY row_id") }
        #expect(versions == [3, 4])
        let cursor = try database.read { db in try String.fetchOne(db, sql: "SELECT cursor FROM ferry_cursors WHERE scope = 'user:alice'") }
        #expect(cursor == "c1")
    }

    @Test func pendingColumnsAreKeptAndTheBaseStays() throws {
        _ = try applier().apply(page([note("1", version: 3, title: "server title", body: "server body")]))
        try database.write { db in try db.execute(sql: "UPDATE note SET title = 'my title' WHERE id = '1'") }
        _ = try applier().apply(page([note("1", version: 9, title: "newer server title", body: "newer body", counter: 2)]))

        let row = try database.read { db in try Row.fetchOne(db, sql: "SELECT title, body, counter FROM note WHERE id = '1'")! }
        #expect(row["title"] == "my title")
        #expect(row["body"] == "newer body")
        #expect(row["counter"] == 2)
        let pending = try database.outbox.pendingMutations()
        #expect(pending.count == 1)
        #expect(pending.first?.columns == ["title"])
        #expect(pending.first?.baseVersion == 3)
    }

    @Test func olderVersionNeverRollsARowBack() throws {
        _ = try applier().apply(page([note("1", version: 9, title: "new", body: "new")]))
        let report = try applier().apply(page([note("1", version: 5, title: "old", body: "old")]))
        #expect(report.kept == 1)
        #expect(try database.read { db in try String.fetchOne(db, sql: "SELECT title FROM note") } == "new")
    }

    @Test func serverDeleteRemovesTheRowUnlessEditsArePending() throws {
        _ = try applier().apply(page([note("1", version: 3, title: "a", body: "b"), note("2", version: 3, title: "a", body: "b")]))
        try database.write { db in try db.execute(sql: "UPDATE note SET body = 'mine' WHERE id = '2'") }
        let deletes = ["1", "2"].map { RowChange(table: "note", rowID: $0, version: 10, deleted: true, values: [:]) }
        let report = try applier().apply(page(deletes))
        #expect(report.deleted == 1 && report.kept == 1)
        #expect(try database.read { db in try String.fetchAll(db, sql: "SELECT id FROM note") } == ["2"])
    }

    /// A row STRICT refuses is set aside with SQLite's error; the rest of
    /// the page (the same savepoint group included) applies.
    @Test func aBadRowIsSetAsideAndTheRestApplies() throws {
        var changes = (0..<250).map {
            RowChange(
                table: "reading", rowID: "r\($0)", version: Int64($0 + 1), deleted: false,
                values: ["value": .integer(Int64($0))])
        }
        changes[120] = RowChange(table: "reading", rowID: "r120", version: 121, deleted: false, values: ["value": .text("not a number")])
        changes[200] = RowChange(table: "reading", rowID: "r200", version: 201, deleted: false, values: ["value": .null])
        let report = try applier().apply(page(changes))

        #expect(report.written == 248)
        #expect(report.setAside.map(\.rowID) == ["r120", "r200"])
        #expect(report.setAside.first?.reason.contains("cannot store TEXT value in INTEGER column") == true)
        #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM reading") } == 248)
        #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM ferry_set_aside") } == 2)

        // A later, valid version of a set-aside row applies and clears it.
        let fixed = RowChange(table: "reading", rowID: "r120", version: 300, deleted: false, values: ["value": .integer(120)])
        _ = try applier().apply(page([fixed], cursor: "c2"))
        #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM ferry_set_aside") } == 1)
    }

    @Test func rowsOfTablesThisAppDoesNotSyncAreIgnored() throws {
        let change = RowChange(table: "future_table", rowID: "1", version: 1, deleted: false, values: ["x": 1])
        let report = try applier().apply(page([change]))
        #expect(report.ignored == 1)
        #expect(report.setAside.isEmpty)
    }
    /// A pulled row's stamp moves the device's clock past it, so the next
    /// local edit orders after it under last-write-wins even when this
    /// device's wall clock is behind the writer's.
    @Test func aPulledStampAdvancesTheDevicesClock() throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let ahead = HLCTimestamp(wallMilliseconds: now + 30_000, counter: 7)
        var change = note("1", version: 3, title: "from a fast clock", body: "b")
        change.hlc = ahead
        // A stamp from a clock years ahead (or forged) is not followed: it would stall or crash the clock.
        var forged = note("2", version: 4, title: "from the far future", body: "b")
        forged.hlc = HLCTimestamp(rawValue: Int64.max)
        _ = try applier().apply(page([change, forged]))
        try database.write { db in try db.execute(sql: "UPDATE note SET title = 'later here' WHERE id = '1'") }
        let stamp = try #require(try database.outbox.pendingMutations().first?.hlc)
        #expect(stamp > ahead)
        #expect(stamp.wallMilliseconds < now + 60_000)
    }

    /// Set-aside rows are listed, counted and observable, like rejected mutations.
    @Test func setAsideRowsAreListed() async throws {
        let bad = RowChange(table: "reading", rowID: "r1", version: 4, deleted: false, values: ["value": .text("NaN")])
        _ = try await applier().apply(page([bad]))
        let rows = try database.setAsideRows.list()
        #expect(rows.map(\.rowID) == ["r1"] && rows.first?.table == "reading" && rows.first?.version == 4)
        #expect(rows.first?.reason.contains("INTEGER") == true)
        #expect(try database.setAsideRows.count() == 1)
        var observed = database.setAsideRows.observe().makeAsyncIterator()
        #expect(try await observed.next()?.map(\.rowID) == ["r1"])
    }

    /// A page's rows are written in multi-row upserts (``UpsertBatch``):
    /// the result is what applying each change alone, in order, gives.
    /// Random pages mix tables, column sets (a run of one set breaks the
    /// batch), deletes, rows repeated later in the page with newer
    /// versions, empty strings and blobs, NULLs and floats; and a run of 237
    /// rows of one column set, written as statements of 100, 25, 5 and 1.
    /// Stamps, a row with a pending edit, rows a STRICT column refuses (set
    /// aside) and rows of a table this app does not sync are among them.
    /// In one run of a column set, a row written twice keeps its later
    /// values, a row written then deleted is gone, and a row written again
    /// at an older version keeps the newer. Rows the device holds at newer
    /// versions are left as they are, wherever they fall in a savepoint.
    /// Without refused rows the page applies whole, in one savepoint; with
    /// them, in groups and row by row.
    @Test(arguments: [1, 2, 3], [true, false])
    func rowsWrittenTogetherEqualRowsWrittenOneByOne(seed: UInt64, refusedRows: Bool) throws {
        var random = SplitMix64(mixing: seed)
        var version: Int64 = 0
        func next() -> Int64 {
            version += 1
            return version
        }
        let texts: [ColumnValue] = [.text(""), .text("été"), .blob(Data()), .blob(Data([1, 2])), .null, .real(0.1), .integer(7)]
        var changes: [RowChange] = []
        for _ in 0..<400 {
            let id = "n\(Int.random(in: 0..<60, using: &random))"
            if Int.random(in: 0..<10, using: &random) == 0 {
                changes.append(RowChange(table: "note", rowID: id, version: next(), deleted: true, values: [:]))
                continue
            }
            if Int.random(in: 0..<40, using: &random) == 0 {
                changes.append(RowChange(table: "future_table", rowID: id, version: next(), deleted: false, values: ["x": 1]))
                continue
            }
            if Bool.random(using: &random) {
                // One in twenty a value the STRICT column refuses: set aside, its group applied row by row.
                let refused = Int.random(in: 0..<20, using: &random) == 0 && refusedRows
                let value: ColumnValue = refused ? .text("not a number") : .integer(Int64.random(in: -5...5, using: &random))
                changes.append(
                    RowChange(
                        table: "reading", rowID: "r\(Int.random(in: 0..<30, using: &random))", version: next(), deleted: false,
                        values: ["value": value]))
                continue
            }
            var values: [String: ColumnValue] = [:]
            for column in ["title", "body"] where Int.random(in: 0..<4, using: &random) > 0 {
                values[column] = texts.randomElement(using: &random)!
            }
            if Bool.random(using: &random) { values["counter"] = .integer(Int64.random(in: 0...9, using: &random)) }
            var change = RowChange(table: "note", rowID: Bool.random(using: &random) ? id : "pending", version: next(), deleted: false, values: values)
            if Bool.random(using: &random) { change.hlc = HLCTimestamp(wallMilliseconds: 1_000 + change.version, counter: 0) }
            changes.append(change)
        }
        // In one run of a column set: a row written twice, a row written then deleted, and a row
        // written again at an older version (left as it is).
        for (id, title) in [("twice", "first"), ("gone", "here"), ("twice", "second"), ("other", "x")] {
            changes.append(note(id, version: next(), title: title, body: "b"))
        }
        changes.append(RowChange(table: "note", rowID: "gone", version: next(), deleted: true, values: [:]))
        changes.append(note("older", version: 900_000, title: "newer", body: "b"))
        changes.append(note("older", version: next(), title: "older", body: "b"))
        // Rows the device holds at newer versions than the page's, among rows it does not.
        let held = (0..<5).map { note("held\($0)", version: 1_000_000, title: "held", body: "held") }
        for (index, change) in changes.enumerated().reversed() where index % 50 == 0 {
            let stale = held[index % held.count]
            changes.insert(note(stale.rowID, version: change.version, title: "stale", body: "stale"), at: index)
        }
        changes.insert(RowChange(table: "note", rowID: "held0", version: 5, deleted: true, values: [:]), at: 30)
        for n in 0..<237 {
            changes.append(note("long\(n)", version: next(), title: "t\(n)", body: "", counter: Int64(n)))
        }

        // A row with a pending local edit of its title, on both devices.
        let oneByOne = try FerryDatabase(writer: DatabaseQueue(), schema: SyncSchema.schema())
        for device in [database, oneByOne] {
            _ = try PageApplier(database: device, userScope: "user:alice")
                .apply(page(held + [note("pending", version: 1, title: "pulled", body: "pulled")], cursor: "c0"))
            try device.write { db in try db.execute(sql: "UPDATE note SET title = 'mine' WHERE id = 'pending'") }
        }
        let report = try applier().apply(page(changes))
        #expect(report.kept >= 11)
        #expect(report.setAside.isEmpty == !refusedRows)
        for (index, change) in changes.enumerated() {
            _ = try PageApplier(database: oneByOne, userScope: "user:alice").apply(page([change], cursor: "c\(index)"))
        }
        let contents = """
            SELECT 'note', id, typeof(title), title, typeof(body), body, counter FROM note
            UNION ALL SELECT 'reading', id, 'integer', value, NULL, NULL, NULL FROM reading
            UNION ALL SELECT 'version', tbl || '/' || row_id, NULL, version, NULL, hlc, NULL FROM ferry_rows
            UNION ALL SELECT 'set aside', tbl || '/' || row_id, NULL, version, NULL, NULL, NULL FROM ferry_set_aside
            UNION ALL SELECT 'outbox', tbl || '/' || row_id, op, base_version, NULL, columns, NULL FROM ferry_outbox
            ORDER BY 1, 2
            """
        let together = try database.read { db in try Row.fetchAll(db, sql: contents) }
        let alone = try oneByOne.read { db in try Row.fetchAll(db, sql: contents) }
        #expect(together.count > 300)
        let difference = together.difference(from: alone)
        #expect(difference.isEmpty, "rows written together differ from rows written alone: \(Array(difference).prefix(6))")
        let titles = try database.read { db in
            try String.fetchAll(db, sql: "SELECT id || ':' || title FROM note WHERE id IN ('twice', 'gone', 'older', 'held0', 'held4') ORDER BY id")
        }
        #expect(titles == ["held0:held", "held4:held", "older:newer", "twice:second"])
        #expect(try database.read { db in try String.fetchOne(db, sql: "SELECT title FROM note WHERE id = 'pending'") } == "mine")
        #expect(try database.outbox.pendingCount() == 1)
    }
}
