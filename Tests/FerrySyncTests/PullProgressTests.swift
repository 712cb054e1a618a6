@testable import Ferry
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// A first sync reports how far it got against the server's estimate: the
/// rows applied never go back, the estimate never shrinks or falls below
/// them while the pull runs, and both end at the rows applied.
@Suite(.postgresTurns) struct PullProgressTests {
    @Test(arguments: StoreKind.available)
    func aFirstSyncsProgressIsMonotonicAndEndsAtTheRowsApplied(kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let directory = try TemporaryDirectory()
            let writer = try await Device.make("writer", user: "alice", server: server, directory: directory) { $0.pushBatchSize = 500 }
            try await writer.database.write { db in
                for index in 0..<1234 { try db.execute(sql: "INSERT INTO note(id, title) VALUES (?, 'n')", arguments: ["n\(index)"]) }
            }
            try await writer.engine.sync()

            let phone = try await Device.make("phone", user: "alice", server: server, directory: directory) { $0.pullPageSize = 100 }
            let seen = Locked<[SyncStatus]>([])
            let watcher = Task {
                for await status in phone.engine.statusUpdates() { seen.withLock { $0.append(status) } }
            }
            defer { watcher.cancel() }
            let summary = try await phone.engine.sync()
            #expect(summary.pulled == 1234)
            #expect(try await eventually(within: .seconds(10)) { seen.withLock { $0.last?.lastSuccessfulSync != nil } })

            let statuses = seen.withLock { $0 }
            let pulling = statuses.filter { $0.phase == .pulling && $0.pullEstimate != nil }
            #expect(pulling.count >= 5, "the pull reported its progress page by page: \(pulling.count)")
            #expect(pulling.first?.pullEstimate == 1234, "the first page carried the scope's row count")
            for (before, after) in zip(statuses, statuses.dropFirst()) {
                #expect(after.pulled >= before.pulled)
                if let earlier = before.pullEstimate, let later = after.pullEstimate { #expect(later >= earlier) }
            }
            #expect(statuses.allSatisfy { status in status.pullEstimate.map { $0 >= status.pulled } ?? true })
            let last = try #require(statuses.last)
            #expect(last.pulled == 1234 && last.pullEstimate == 1234)

            // The next sync has nothing from scratch: no estimate.
            try await phone.engine.sync()
            #expect(phone.engine.status.pullEstimate == nil && phone.engine.status.pulled == 0)
        }
    }
}
