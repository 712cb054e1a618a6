@testable import Ferry
import FerryProtocol
@testable import FerryServer
import Foundation
import Testing
import FerryTestSupport

/// The admin change feed under a concurrent workload: on SQLite, and on
/// PostgreSQL with two instances taking writes while a reader tails the
/// other, every row's changes arrive in order, and none is missing.
@Suite(.postgresTurns, .serialized)
struct ChangeFeedTests {
    static let rows = (0..<12).map { "r\($0)" }
    static let scopes = ["user:alice", "user:bob"]

    @Test(arguments: StoreKind.available)
    func theFeedHasEveryChangeInOrderPerRow(kind: StoreKind) async throws {
        let first = try await SyncServer.start(store: kind, configure: SyncServer.withAdmin)
        var instances = [first]
        do {
            if kind == .postgres {
                instances.append(try await SyncServer.start(store: .postgres, sharing: first.postgres, configure: SyncServer.withAdmin))
            }
            let admins = instances.map(\.admin)
            let reader = admins.last!
            // Four writers, each request to the next instance, while the reader tails the feed.
            let tail = Task {
                var seen: [ChangeFeedEntry] = []
                var cursor: String?
                var failures: [String] = []
                // Stopped by cancellation; a page cut short by it is read again from the cursor.
                while !Task.isCancelled {
                    do {
                        let page = try await reader.changes(after: cursor, limit: 7)
                        seen += page.changes
                        cursor = page.cursor
                    } catch  where !Task.isCancelled {
                        failures.append("\(error)")
                    } catch {}
                    try? await Task.sleep(for: .milliseconds(10))
                }
                return (seen, cursor, failures)
            }
            // Besides the rewrites, each request inserts a row of its own: every one of those changes must show.
            let inserted = Locked<[String: Int64]>([:])
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<4 {
                    group.addTask {
                        var generator = SystemRandomNumberGenerator()
                        for request in 0..<20 {
                            let writes = (0..<Int.random(in: 1...3, using: &generator)).map { _ in
                                let row = Self.rows.randomElement(using: &generator)!
                                return BackendWrite(
                                    scope: Self.scopes.randomElement(using: &generator)!, table: "note", rowID: row,
                                    operation: Int.random(in: 0..<8, using: &generator) == 0 ? .delete : .upsert,
                                    columns: ["title": .text("w\(writer)-\(request)")])
                            }.map { write in
                                var write = write
                                if write.operation == .delete { write.columns = nil }
                                return write
                            }
                            let unique = "u\(writer)-\(request)"
                            let own = BackendWrite(scope: "user:alice", table: "note", rowID: unique, columns: ["title": .text(unique)])
                            let admin = admins[(writer + request) % admins.count]
                            let reply = try await admin.write(BackendWriteRequest(writer: "w\(writer)", requestID: "\(request)", writes: writes + [own]))
                            inserted.withLock { $0[unique] = reply.results.last?.version }
                        }
                    }
                }
                try await group.waitForAll()
            }
            tail.cancel()
            var (seen, cursor, failures) = await tail.value
            #expect(failures.isEmpty, "\(failures)")
            #expect(cursor != nil, "the tail read the feed while the writes ran")
            // Everything committed becomes readable once no write runs (on PostgreSQL, once every
            // transaction of the cluster below it has ended): the last pages.
            let expected = inserted.withLock { $0 }
            #expect(expected.count == 80 && expected.values.allSatisfy { $0 > 0 })
            #expect(
                try await eventually(within: .seconds(20)) {
                    let rest = try await reader.changes(after: cursor)
                    seen += rest.changes
                    cursor = rest.cursor
                    let versions = Dictionary(seen.map { ($0.rowID, $0.version) }, uniquingKeysWith: max)
                    return expected.allSatisfy { versions[$0.key] == $0.value }
                })
            // Every row inserted once is in the feed exactly once, at the version its write got.
            for (rowID, version) in expected {
                #expect(seen.filter { $0.rowID == rowID }.map(\.version) == [version], "\(rowID)")
            }

            var last: [String: Int64] = [:]
            for change in seen {
                let key = "\(change.scope)/\(change.rowID)"
                #expect(change.version > last[key] ?? 0, "\(key) went back from v\(last[key] ?? 0) to v\(change.version)")
                last[key] = change.version
            }
            var stored = 0
            for scope in Self.scopes {
                for rowID in Self.rows {
                    guard let row = try await first.store.row(scope: scope, table: "note", rowID: rowID) else { continue }
                    stored += 1
                    #expect(last["\(scope)/\(rowID)"] == row.version, "\(scope)/\(rowID) is at v\(row.version) in the store")
                    let final = seen.last { $0.scope == scope && $0.rowID == rowID }
                    #expect(final?.deleted == row.deleted && (row.deleted || final?.values == row.values))
                }
            }
            #expect(stored == last.count - expected.count && stored > 10)
            // A garbled cursor is refused; a filtered read sees only its scope and table.
            #expect(try await reader.send(.GET, "/admin/v1/changes?cursor=garbage").status == 400)
            let bobs = try await reader.changes(query: "&scope=user:bob&table=note").changes
            #expect(!bobs.isEmpty && bobs.allSatisfy { $0.scope == "user:bob" })
            #expect(bobs.count == last.keys.filter { $0.hasPrefix("user:bob/") }.count)
            #expect(try await reader.changes(query: "&table=note&scope=user:alice").changes.count == last.keys.filter { $0.hasPrefix("user:alice/") }.count)
        } catch {
            for instance in instances.reversed() { await instance.stop() }
            throw error
        }
        for instance in instances.reversed() { await instance.stop() }
    }
}
