import FerrySQLite
import GRDB
import GRDBSQLite
import Testing

/// Rows written in multi-row statements (`Database.execute(rows:width:sql:suffix:bind:)`):
/// every row lands once and in order whatever the count, SQLite's parameter
/// limit bounds a statement, and an error stops the rows where it happened.
@Suite struct ManyRowsTests {
    @Test(arguments: [0, 1, 4, 99, 100, 131, 257])
    func everyRowLandsOnceInItsOrder(count: Int) throws {
        let queue = try DatabaseQueue()
        var statements: [String] = []
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (n INTEGER PRIMARY KEY AUTOINCREMENT, i, text)")
            db.trace { statements.append("\($0)") }
            try db.execute(rows: 0..<count, width: 2, sql: "INSERT INTO t (i, text) VALUES") { binder, i in
                try binder.bind(Int64(i))
                try binder.bind(i.isMultiple(of: 3) ? nil : "row \(i)")
            }
            db.trace(options: [])
            let rows = try Row.fetchAll(db, sql: "SELECT i, text FROM t ORDER BY n")
            #expect(rows.map { $0["i"] as Int } == Array(0..<count))
            #expect(rows.map { $0["text"] as String? } == (0..<count).map { $0.isMultiple(of: 3) ? nil : "row \($0)" })
        }
        // 131 = 100 + 25 + 5 + 1: the largest statements that fit, a handful of shapes.
        let expected = count == 131 ? 4 : count == 257 ? 2 + 2 + 1 + 2 : nil
        if let expected { #expect(statements.count == expected) }
    }

    /// A row given twice ends as the later one, as one statement per row would leave it.
    @Test func aRowGivenTwiceEndsAsTheLaterOne() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (id TEXT PRIMARY KEY, v)")
            let rows = [("a", 1), ("b", 2), ("a", 3)]
            try db.execute(rows: rows, width: 2, sql: "INSERT OR REPLACE INTO t (id, v) VALUES") { binder, row in
                try binder.bind(row.0)
                try binder.bind(Int64(row.1))
            }
            #expect(try Row.fetchAll(db, sql: "SELECT id, v FROM t ORDER BY id") == [["id": "a", "v": 3], ["id": "b", "v": 2]])
        }
    }

    /// A connection whose parameter limit is below a hundred rows' values
    /// writes smaller statements, never one SQLite refuses.
    @Test func theParameterLimitBoundsAStatement() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (a, b, c)")
            sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_VARIABLE_NUMBER, 30)
            try db.execute(rows: 0..<100, width: 3, sql: "INSERT INTO t (a, b, c) VALUES") { binder, i in
                for _ in 0..<3 { try binder.bind(Int64(i)) }
            }
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM t") == 100)
            #expect(try Int.fetchOne(db, sql: "SELECT sum(a) FROM t") == 4950)
        }
    }

    /// An error stops the writing: no later row is written, and the
    /// statement runs again afterwards.
    @Test func anErrorStopsTheRowsWhereItHappened() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (i INTEGER NOT NULL)")
            #expect(throws: DatabaseError.self) {
                try db.execute(rows: 0..<300, width: 1, sql: "INSERT INTO t (i) VALUES") { binder, i in
                    try binder.bind(i == 150 ? nil : Int64(i))
                }
            }
            // The first statement's hundred rows; the one holding the NULL wrote nothing.
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM t") == 100)
            try db.execute(rows: 0..<100, width: 1, sql: "INSERT INTO t (i) VALUES") { binder, i in
                try binder.bind(Int64(i))
            }
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM t") == 200)
        }
    }
}
