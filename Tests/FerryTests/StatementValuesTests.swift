@testable import Ferry
import Foundation
import GRDB
import Testing

/// Values bound straight through SQLite (`Statement.bind(_:)`): each type
/// lands as GRDB would bind it, an empty string or blob stays empty (never
/// NULL), a wrong count of values is an error, and GRDB's observers still
/// see the change.
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

    @Test func aStatementBoundAgainKeepsNoValueOfTheLastBinding() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (a, b)")
            let statement = try db.cachedStatement(sql: "INSERT INTO t (a, b) VALUES (?, ?)")
            try statement.execute(values: ["first".databaseValue, Int64(1).databaseValue])
            try statement.execute(values: ["second".databaseValue, Int64?.none.databaseValue])
            // GRDB's own arguments on the same statement afterwards still bind as GRDB does.
            try statement.execute(arguments: ["third", 3])
            let rows = try Row.fetchAll(db, sql: "SELECT a, b FROM t ORDER BY rowid")
            #expect(rows == [["a": "first", "b": 1], ["a": "second", "b": nil], ["a": "third", "b": 3]])
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
