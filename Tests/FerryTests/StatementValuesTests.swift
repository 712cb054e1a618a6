@testable import Ferry
import FerrySQLite
import Foundation
import GRDB
import GRDBSQLite
import Testing

/// Values bound straight through SQLite (`Statement.bind(_:)`): each type
/// lands as GRDB would bind it, an empty string or blob stays empty (never
/// NULL), a run lets its values go, a failed statement runs again, a wrong
/// count of values is an error, and GRDB's observers still see the change.
@Suite struct StatementValuesTests {
    @Test func eachTypeLandsAsItWasBound() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (i INTEGER PRIMARY KEY, v)")
            let values: [DatabaseValue] = [
                "".databaseValue, Data().databaseValue, "été ✓ 🚢".databaseValue, Data([0, 1, 255]).databaseValue,
                Int64.max.databaseValue, 0.1.databaseValue, .null, String(repeating: "x", count: 100_000).databaseValue,
            ]
            let statement = try db.cachedStatement(sql: "INSERT INTO t (i, v) VALUES (?, ?)")
            for (index, value) in values.enumerated() {
                try statement.bind { binder in
                    try binder.bind(Int64(index))
                    try binder.bind(value)
                }
                try statement.execute()
            }
            let rows = try Row.fetchAll(db, sql: "SELECT typeof(v) AS type, v FROM t ORDER BY i")
            #expect(rows.map { $0["type"] as String } == ["text", "blob", "text", "blob", "integer", "real", "null", "text"])
            #expect(rows.map { $0["v"] as DatabaseValue } == values)
        }
    }

    /// Text with a NUL byte is bound as GRDB binds it, up to the NUL:
    /// stored whole, it would read back cut and look changed to the next
    /// write of the row.
    @Test func textWithANulByteIsBoundAsGRDBBindsIt() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (i INTEGER PRIMARY KEY, v)")
            try db.cachedStatement(sql: "INSERT INTO t (i, v) VALUES (?, ?)").execute(values: [Int64(1).databaseValue, "a\0b".databaseValue])
            try db.execute(sql: "INSERT INTO t (i, v) VALUES (?, ?)", arguments: [2, "a\0b"])
            let rows = try Row.fetchAll(db, sql: "SELECT length(CAST(v AS BLOB)) AS bytes, v FROM t ORDER BY i")
            #expect(rows[0] == rows[1])
            #expect(rows[0]["v"] == "a")
        }
    }

    /// SQLite keeps a statement's bound values until it is bound again, and
    /// a cached statement lives as long as its connection: a run lets them
    /// go. GRDB's own arguments on the same statement still bind after.
    @Test func aStatementRunHoldsNoneOfItsValuesAfter() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (a, b)")
            let statement = try db.cachedStatement(sql: "INSERT INTO t (a, b) VALUES (?, ?)")
            try statement.execute(values: ["a value of the page".databaseValue, Int64(1).databaseValue])
            let expanded = try #require(sqlite3_expanded_sql(statement.sqliteStatement))
            defer { sqlite3_free(expanded) }
            #expect(String(cString: expanded) == "INSERT INTO t (a, b) VALUES (NULL, NULL)")
            try statement.execute(arguments: ["third", 3])
            let rows = try Row.fetchAll(db, sql: "SELECT a, b FROM t ORDER BY rowid")
            #expect(rows == [["a": "a value of the page", "b": 1], ["a": "third", "b": 3]])
        }
    }

    /// A statement whose last run failed runs again with new values (its
    /// first reset answers the old error, which GRDB would trap on).
    @Test func aStatementThatFailedRunsAgain() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (a NOT NULL)")
            let statement = try db.makeStatement(sql: "INSERT INTO t (a) VALUES (?), (?)")
            #expect(throws: DatabaseError.self) { try statement.execute(values: ["ok".databaseValue, .null]) }
            try statement.execute(values: ["one", "two"].map(\.databaseValue))
            #expect(try String.fetchAll(db, sql: "SELECT a FROM t ORDER BY rowid") == ["one", "two"])
        }
    }

    @Test func tooFewOrTooManyValuesAreAnError() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (a, b)")
            let statement = try db.cachedStatement(sql: "INSERT INTO t (a, b) VALUES (?, ?)")
            #expect {
                try statement.execute(values: ["one".databaseValue])
            } throws: { error in
                (error as? DatabaseError)?.resultCode == .SQLITE_MISUSE
            }
            #expect {
                try statement.execute(values: ["one", "two", "three"].map(\.databaseValue))
            } throws: { error in
                (error as? DatabaseError)?.resultCode == .SQLITE_RANGE
            }
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM t") == 0)
        }
    }

    /// The statement still runs through GRDB, so an app's observation of
    /// a table sees the rows a pulled page writes this way.
    @Test func observersSeeTheChange() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in try db.execute(sql: "CREATE TABLE t (a)") }
        let changes = Counter()
        let observer = try DatabaseRegionObservation(tracking: Table("t")).start(in: queue, onError: { _ in }, onChange: { _ in changes.increment() })
        try queue.write { db in
            try db.cachedStatement(sql: "INSERT INTO t (a) VALUES (?), (?)").execute(values: ["x", "y"].map(\.databaseValue))
        }
        #expect(changes.value == 1)
        withExtendedLifetime(observer) {}
    }

    private final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        var value: Int { lock.withLock { count } }
        func increment() { lock.withLock { count += 1 } }
    }
}
