@testable import Ferry
import GRDB
import Testing

/// `ferry_rows`, through its one home: a version only moves forward, a
/// stamp goes with the newest version, and rows gone from the table are
/// forgotten. The capture triggers read it as the base of every edit.
@Suite struct KnownVersionsTests {
    @Test func aVersionOnlyMovesForwardAndItsStampGoesWithTheNewest() throws {
        let database = try NotesAndTasks.inMemory()
        try database.writeWithoutCapture { db in
            try KnownVersions.remember(5, table: "note", rowID: "n1", db)
            try KnownVersions.remember(3, table: "note", rowID: "n1", db)
            #expect(try KnownVersions.version(table: "note", rowID: "n1", db) == 5)

            let n1 = RowKey(table: "note", rowID: "n1"), n2 = RowKey(table: "note", rowID: "n2")
            try KnownVersions.remember([(n1, 4, 400), (n2, 7, 700)][...], db)
            try KnownVersions.remember([(n2, 9, nil)][...], db)
            let known = try KnownVersions.fetch(table: "note", rowIDs: ["n1", "n2", "n3"], db).sorted { $0.rowID < $1.rowID }
            #expect(known.map(\.rowID) == ["n1", "n2"])
            #expect(known.map(\.version) == [5, 9])
            // n1's stamp came with an older version than it holds; n2's stays with its newer version.
            #expect(known.map(\.stamp) == [nil, 700])

            try KnownVersions.forget(table: "note", rowID: "n1", db)
            #expect(try KnownVersions.version(table: "note", rowID: "n1", db) == nil)
        }
    }

    @Test func rowsGoneFromTheTableAreForgottenAndClearedRowsAreBasedOnNothing() throws {
        let database = try NotesAndTasks.inMemory()
        try database.writeWithoutCapture { db in
            try db.execute(sql: "INSERT INTO note(id, title, body) VALUES ('kept', 'a', 'b'), ('other', 'c', 'd')")
            for id in ["kept", "other", "gone"] { try KnownVersions.remember(8, table: "note", rowID: id, db) }
            try KnownVersions.forgetMissing(from: "note", key: "id", db)
            #expect(try KnownVersions.version(table: "note", rowID: "gone", db) == nil)

            try KnownVersions.clear(table: "note", rowIDs: "SELECT id FROM note WHERE title = ?", arguments: ["a"], db)
            #expect(try KnownVersions.version(table: "note", rowID: "kept", db) == 0)
            #expect(try KnownVersions.version(table: "note", rowID: "other", db) == 8)

            try KnownVersions.forget(table: "note", rowIDs: "SELECT id FROM note WHERE title = ?", arguments: ["c"], db)
            #expect(try KnownVersions.version(table: "note", rowID: "other", db) == nil)
        }
        // An edit made now is based on what the device knows: `kept` on nothing newer than 0.
        try database.write { db in try db.execute(sql: "UPDATE note SET body = 'e' WHERE id = 'kept'") }
        #expect(try database.outbox.pendingMutations().first { $0.rowID == "kept" }?.baseVersion == 0)
    }
}
