import Ferry
@testable import FerryNotes
import FerryTestSupport
import Foundation
import GRDB
import Testing

/// The notes schema: every list query reads its own index (no full scan,
/// no sort), search goes through FTS5 kept in step by triggers, and version
/// 1 has a committed fixture and snapshot that `MigrationTester` checks.
@Suite struct NotesSchemaTests {
    static let fixtures = URL(filePath: #filePath).deletingLastPathComponent().appending(path: "Fixtures")

    static func library(_ directory: TemporaryDirectory, name: String = "notes.sqlite") throws -> NotesLibrary {
        let library = try NotesLibrary(path: directory.path(name))
        let token = "x.\(Data("{\"sub\":\"alice\"}".utf8).base64EncodedString()).y"
        _ = try library.signIn(server: URL(string: "http://127.0.0.1:9")!, token: token)
        return library
    }

    static let queries: [(String, NoteQuery)] = [
        ("all", NoteQuery()),
        ("all, next page", NoteQuery(after: NoteCursor(updatedAt: 5, id: "x"))),
        ("deleted", NoteQuery(filter: .deleted)),
        ("category", NoteQuery(filter: .category("work"))),
        ("category, next page", NoteQuery(filter: .category("work"), after: NoteCursor(updatedAt: 5, id: "x"))),
        ("notebook", NoteQuery(filter: .notebook(id: "n"))),
        ("tag", NoteQuery(filter: .tag("home"))),
        ("tag, next page", NoteQuery(filter: .tag("home"), after: NoteCursor(updatedAt: 5, id: "x"))),
    ]

    @Test func everyListQueryReadsItsIndexInOrder() throws {
        let directory = try TemporaryDirectory()
        let library = try Self.library(directory)
        for (name, query) in Self.queries {
            let (sql, arguments) = query.sql()
            let plan = try library.database.read { db in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map { $0["detail"] as String }
            }
            #expect(!plan.contains { $0.hasPrefix("SCAN note") && !$0.contains("INDEX") }, "\(name): \(plan)")
            #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(name) sorts: \(plan)")
            #expect(plan.contains { $0.contains("INDEX") || $0.contains("PRIMARY KEY") }, "\(name): \(plan)")
        }
        let (searchSQL, searchArguments) = try #require(NoteSearch("cafe")).sql()
        let search = try library.database.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + searchSQL, arguments: searchArguments).map { $0["detail"] as String }
        }
        #expect(search.contains { $0.contains("VIRTUAL TABLE INDEX") }, "\(search)")
        #expect(search.contains { $0.contains("SEARCH note_key USING INTEGER PRIMARY KEY") }, "\(search)")
        #expect(search.contains { $0.contains("SEARCH note USING INDEX") }, "\(search)")
    }

    @Test func listsPageNewestFirstWithKeysetCursors() throws {
        let directory = try TemporaryDirectory()
        let clock = Counter()
        let library = try NotesLibrary(path: directory.path("notes.sqlite"), clock: { clock.next() })
        _ = try library.signIn(server: URL(string: "http://127.0.0.1:9")!, token: "x.\(Data("{\"sub\":\"alice\"}".utf8).base64EncodedString()).y")
        var added: [Note] = []
        for index in 0..<25 {
            added.append(try library.add(title: "Note \(index)", category: index % 2 == 0 ? "even" : "odd", tags: index % 3 == 0 ? ["three"] : []))
        }
        for (filter, expected) in [
            (NoteQuery.Filter.all, added), (.category("even"), added.filter { $0.category == "even" }),
            (.tag("three"), added.filter { $0.tags == ["three"] }),
        ] {
            var seen: [String] = []
            var cursor: NoteCursor?
            repeat {
                let page = try library.list(NoteQuery(filter: filter, limit: 4, after: cursor))
                seen += page.map(\.id)
                cursor = page.count == 4 ? page.last.map(NoteCursor.init) : nil
            } while cursor != nil
            #expect(seen == expected.reversed().map(\.id), "\(filter)")
        }
        // Deleting moves a note to the deleted list and out of its tag's.
        try library.remove(added[0].id)
        #expect(try library.list(NoteQuery(filter: .deleted)).map(\.id) == [added[0].id])
        #expect(!(try library.list(NoteQuery(filter: .tag("three"))).map(\.id).contains(added[0].id)))
        try library.restore(String(added[0].id.prefix(10)))
        #expect(try library.list(NoteQuery(filter: .tag("three"))).first?.id == added[0].id)
    }

    /// Every order, each way round, under every filter: the pages visit
    /// every note once, in the order a plain sort of the same notes gives
    /// (titles case ignored, equal keys by id), cursors printed and read back.
    @Test func listsPageInEveryOrder() throws {
        let directory = try TemporaryDirectory()
        let clock = Counter()
        let library = try NotesLibrary(path: directory.path("notes.sqlite"), clock: { clock.next() })
        let titles = ["banana", "Apple", "cherry", "apple", "Banana", "date", "Éclair", "fig", "apple"]
        var added: [Note] = []
        for index in 0..<27 {
            added.append(try library.add(title: "\(titles[index % titles.count]) \(index % 4)", category: index % 2 == 0 ? "even" : "odd", tags: index % 3 == 0 ? ["three"] : []))
        }
        // Edited in another order than created: by change and by creation differ.
        for note in added.shuffled() { try library.edit(note.id, .init(body: "edited")) }
        let notes = try library.list(NoteQuery(limit: 100))
        func sorted(_ notes: [Note], _ order: NoteOrder, reversed: Bool) -> [String] {
            let ascending: [Note] = notes.sorted { a, b in
                switch order {
                case .updated: return (a.updatedAt, a.id) < (b.updatedAt, b.id)
                case .created: return (a.createdAt, a.id) < (b.createdAt, b.id)
                case .title:
                    let (x, y) = (a.title.lowercased(), b.title.lowercased())
                    return x != y ? x < y : a.id < b.id
                }
            }
            return (order == .title) != reversed ? ascending.map(\.id) : ascending.reversed().map(\.id)
        }
        for order in NoteOrder.allCases {
            for reversed in [false, true] {
                for (filter, expected) in [
                    (NoteQuery.Filter.all, notes), (.category("even"), notes.filter { $0.category == "even" }),
                    (.tag("three"), notes.filter { $0.tags == ["three"] }),
                ] {
                    var seen: [String] = []
                    var cursor: NoteCursor?
                    repeat {
                        let page = try library.list(NoteQuery(filter: filter, order: order, reversed: reversed, limit: 4, after: cursor))
                        seen += page.map(\.id)
                        cursor = try page.count == 4 ? #require(page.last.flatMap { NoteCursor(text: NoteCursor($0, order: order).text) }) : nil
                    } while cursor != nil
                    #expect(seen == sorted(expected, order, reversed: reversed), "\(order) reversed \(reversed) \(filter)")
                }
            }
        }
        #expect(NoteCursor(text: "t\(Data("Ünïcode.title/+".utf8).base64EncodedString()).abc")?.key == .title("Ünïcode.title/+"))
        #expect(NoteCursor(text: NoteCursor(key: .title("a.b/c+d"), id: "x").text) == NoteCursor(key: .title("a.b/c+d"), id: "x"))
        // A cursor knows its order: one from a list by change does not continue a list by creation.
        let byChange = try #require(NoteCursor(text: NoteCursor(notes[0], order: .updated).text))
        let byCreation = try #require(NoteCursor(text: NoteCursor(notes[0], order: .created).text))
        #expect(byChange.fits(.updated) && !byChange.fits(.created) && !byChange.fits(.title))
        #expect(byCreation.fits(.created) && !byCreation.fits(.updated))
    }

    @Test func searchFoldsDiacriticsMatchesPrefixesAndRanksTitlesFirst() throws {
        let directory = try TemporaryDirectory()
        let library = try Self.library(directory)
        let title = try library.add(title: "Café crème", body: "a recipe")
        let body = try library.add(title: "Breakfast", body: "coffee at the cafe on the corner")
        _ = try library.add(title: "Unrelated", body: "nothing here")
        let hits = try library.search("cafe")
        #expect(hits.map(\.note.id) == [title.id, body.id])
        #expect(hits[0].snippet.contains("[Café]"))
        #expect(try library.search("cre caf").map(\.note.id) == [title.id])
        // Edits and deletes keep the index in step.
        try library.edit(title.id, .init(title: "Tea"))
        #expect(try library.search("cafe").map(\.note.id) == [body.id])
        try library.remove(body.id)
        #expect(try library.search("cafe").isEmpty)
        #expect(try library.search("  ").isEmpty)
    }

    /// Search pages and filters: pages of 7 visit every hit once, in the
    /// order of the whole list; a filter keeps exactly the hits it should,
    /// in the same order.
    @Test func searchPagesAndFilters() throws {
        let directory = try TemporaryDirectory()
        let clock = Counter()
        let library = try NotesLibrary(path: directory.path("notes.sqlite"), clock: { clock.next() })
        for index in 0..<40 {
            let body = String(repeating: "budget ", count: 1 + index % 5) + String(repeating: "filler ", count: index % 7)
            try library.add(
                title: index % 4 == 0 ? "budget \(index)" : "note \(index)", body: index % 10 == 9 ? "nothing" : body,
                category: index % 2 == 0 ? "even" : "odd", tags: index % 3 == 0 ? ["work"] : [])
        }
        let all = try library.search(try #require(NoteSearch("budg", limit: 100)))
        #expect(all.count == 36)
        var paged: [String] = []
        for page in 0..<6 { paged += try library.search(try #require(NoteSearch("budg", limit: 7, offset: page * 7))).map(\.note.id) }
        #expect(paged == all.map(\.note.id))
        let middle = try #require(all.dropFirst(10).first).note.updatedAt
        for (filter, since, keep) in [
            (NoteQuery.Filter.tag("work"), nil as Int64?, { (note: Note) in note.tags == ["work"] }),
            (.category("odd"), nil, { $0.category == "odd" }),
            (.all, middle, { $0.updatedAt >= middle }),
            (.deleted, nil, { _ in false }),
        ] {
            var filtered: [String] = []
            for page in 0..<6 {
                filtered += try library.search(try #require(NoteSearch("budg", limit: 7, offset: page * 7, filter: filter, since: since))).map(\.note.id)
            }
            #expect(filtered == all.filter { keep($0.note) }.map(\.note.id), "\(filter)")
        }
    }

    @Test func searchSurvivesAVacuum() throws {
        // VACUUM may renumber the implicit rowids of `note`; search keys by `note_key`, which it keeps.
        let directory = try TemporaryDirectory()
        let library = try Self.library(directory)
        var kept: [Note] = []
        for index in 0..<200 {
            let note = try library.add(title: "Note \(index)", body: index == 151 ? "the needle" : "hay")
            if index % 3 == 0 { try library.database.write { db in _ = try Note.deleteOne(db, key: note.id) } } else { kept.append(note) }
        }
        try library.database.writer.vacuum()
        #expect(try library.search("needle").map(\.note.id) == kept.filter { $0.body == "the needle" }.map(\.id))
    }

    @Test func rowsArrivingBySyncAreIndexedByTheTriggers() throws {
        // Ferry applies a pulled row as an upsert with capture off; the triggers see it like any write.
        let directory = try TemporaryDirectory()
        let library = try Self.library(directory)
        try library.database.write { db in
            for _ in 0..<2 {
                try db.execute(
                    sql: """
                        INSERT INTO note(id, title, body, tags, author, scope, created_at, updated_at)
                        VALUES ('pulled', 'Über naïve', 'from another device', '["remote"]', 'bob', 'user:alice', 1, 2)
                        ON CONFLICT(id) DO UPDATE SET title = excluded.title, body = excluded.body, tags = excluded.tags,
                            updated_at = excluded.updated_at
                        """)
            }
        }
        #expect(try library.search("uber naive").map(\.note.id) == ["pulled"])
        #expect(try library.list(NoteQuery(filter: .tag("remote"))).map(\.id) == ["pulled"])
        // A local edit, then the pulled upsert again, then a pulled delete: each kept in step.
        try library.edit("pulled", .init(body: "edited here"))
        try library.database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO note(id, title, body, tags, author, scope, created_at, updated_at)
                    VALUES ('pulled', 'Über naïve', 'from the server', '["remote","remote"]', 'bob', 'user:alice', 1, 9)
                    ON CONFLICT(id) DO UPDATE SET body = excluded.body, tags = excluded.tags, updated_at = excluded.updated_at
                    """)
        }
        #expect(try library.search("server").map(\.note.id) == ["pulled"])
        #expect(try library.search("edited").isEmpty)
        try library.database.write { db in try db.execute(sql: "DELETE FROM note WHERE id = 'pulled'") }
        #expect(try library.search("uber").isEmpty)
        #expect(try library.list(NoteQuery(filter: .tag("remote"))).isEmpty)
    }

    /// Every shipped version's committed fixture upgrades to this one, and
    /// a fresh install matches this version's committed snapshot.
    @Test(arguments: ["v1", "v2"])
    func shippedVersionsUpgradeFromTheirCommittedFixtures(version: String) throws {
        let tester = MigrationTester(schema: NotesSchema.schema, snapshotsDirectory: Self.fixtures)
        try tester.checkCommittedSnapshot()
        try tester.upgrade(fixture: Self.fixtures.appending(path: "notes-\(version).sqlite")) { database in
            let titles = try database.read { db in try String.fetchAll(db, sql: "SELECT title FROM note ORDER BY id") }
            #expect(titles.contains("naïve café ☕️"))
            let tagged = try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM note_tag") ?? 0 }
            #expect(tagged > 0)
            // v2: conflict numbers are kept, and never given twice.
            #expect(try database.read { db in try db.tableExists("notes_conflict_number") })
        }
    }

    /// Writes this version's fixture and snapshot: run once when a version
    /// ships (`FERRY_NOTES_WRITE_FIXTURES=1 swift test --filter NotesSchemaTests`).
    @Test(.enabled(if: ProcessInfo.processInfo.environment["FERRY_NOTES_WRITE_FIXTURES"] == "1"))
    func writeThisVersionsFixture() throws {
        try FileManager.default.createDirectory(at: Self.fixtures, withIntermediateDirectories: true)
        let file = Self.fixtures.appending(path: "notes-\(NotesSchema.version).sqlite")
        try? FileManager.default.removeItem(at: file)
        let directory = try TemporaryDirectory()
        let library = try Self.library(directory)
        try library.add(title: "naïve café ☕️", body: "with\nseveral\nlines", category: "food", tags: ["paris", "to try"])
        try library.add(title: "Empty body")
        let gone = try library.add(title: "Deleted", tags: ["old"])
        try library.remove(gone.id)
        try library.createNotebook("Shared")
        try library.add(title: "In a notebook", notebook: "Shared")
        try library.database.writer.vacuum(into: file.path)
        let snapshot = try MigrationTester(schema: NotesSchema.schema).freshInstallSnapshot(includingFerryObjects: false)
        try snapshot.text.write(to: Self.fixtures.appending(path: "\(NotesSchema.version).schema.txt"), atomically: true, encoding: .utf8)
    }
}

/// Milliseconds that go up by one each call.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Int64 = 1_700_000_000_000
    func next() -> Int64 {
        lock.withLock {
            value += 1; return value
        }
    }
}
