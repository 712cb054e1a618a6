import FerryProtocol
import Foundation
import GRDB

extension SQLiteSyncStore {
    /// Collects garbage by `GarbageRules` (in `Stores/Pipeline`). Versions commit in order here,
    /// so every tombstone is readable and the horizon is a version alone.
    public func collectGarbage(before cutoff: Date) async throws -> GarbageReport {
        let cutoff = GarbageRules.milliseconds(cutoff)
        let known = self.known
        return try await write { db in
            try db.execute(sql: "DELETE FROM notices WHERE created_at < ?", arguments: [cutoff])
            // A collected tombstone stays as its deletion record: keys, version
            // and deleter, its values and history gone.
            let doomed = "deleted = 1 AND collected = 0 AND changed_at < ?"
            let newest = try Int64.fetchOne(db, sql: "SELECT MAX(version) FROM rows WHERE \(doomed)", arguments: [cutoff])
            let horizon = max(try Self.meta(db, "horizon"), newest ?? 0)
            try db.execute(
                sql: """
                    DELETE FROM history WHERE EXISTS (
                        SELECT 1 FROM rows r
                        WHERE r.scope = history.scope AND r.tbl = history.tbl AND r.row_id = history.row_id AND r.\(doomed))
                    """,
                arguments: [cutoff]
            )
            try db.execute(sql: "UPDATE rows SET cells = '{}', collected = 1 WHERE \(doomed)", arguments: [cutoff])
            let removed = db.changesCount
            try db.execute(
                sql: """
                    DELETE FROM history WHERE version < ? AND EXISTS (
                        SELECT 1 FROM history newer
                        WHERE newer.scope = history.scope AND newer.tbl = history.tbl
                        AND newer.row_id = history.row_id AND newer.col = history.col
                        AND newer.version > history.version AND newer.version <= ?)
                    """,
                arguments: [horizon, horizon]
            )
            try db.execute(
                sql: """
                    DELETE FROM results WHERE version < ? AND mutation_id < (
                        SELECT c.last_mutation_id FROM clients c WHERE c.user_id = results.user_id AND c.client_id = results.client_id)
                    """,
                arguments: [horizon]
            )
            try db.execute(
                sql: """
                    DELETE FROM applied_runs WHERE version < ? AND last_mutation_id < (
                        SELECT c.last_mutation_id FROM clients c WHERE c.user_id = applied_runs.user_id AND c.client_id = applied_runs.client_id)
                    """,
                arguments: [horizon]
            )
            try db.execute(
                sql: """
                    DELETE FROM mutation_digests WHERE version < ? AND last_mutation_id < (
                        SELECT c.last_mutation_id FROM clients c
                        WHERE c.user_id = mutation_digests.user_id AND c.client_id = mutation_digests.client_id)
                    """,
                arguments: [horizon]
            )
            try db.execute(sql: "UPDATE store_meta SET value = ? WHERE key = 'horizon'", arguments: [horizon])
            db.afterNextTransaction { _ in known.withLock { $0.collected(horizon: horizon) } }
            return GarbageReport(horizon: horizon, tombstonesRemoved: removed)
        }
    }

    public func blobReferences() async throws -> Set<BlobKey> {
        try await read { db in
            var keys = Set<BlobKey>()
            let table = BlobGarbageRules.attachmentTable, column = BlobGarbageRules.hashColumn
            for row in try Row.fetchAll(db, sql: "SELECT scope, cells FROM rows WHERE tbl = ? AND deleted = 0", arguments: [table]) {
                let cells = try StoreCoding.cells(row["cells"])
                if let key = BlobGarbageRules.key(scope: row["scope"], hash: cells[column]?.value) { keys.insert(key) }
            }
            // A deleted row's values live on in its history until its tombstone is collected.
            for row in try Row.fetchAll(db, sql: "SELECT scope, value FROM history WHERE tbl = ? AND col = ?", arguments: [table, column]) {
                let value = try? JSONDecoder().decode(ColumnValue.self, from: Data((row["value"] as String).utf8))
                if let key = BlobGarbageRules.key(scope: row["scope"], hash: value) { keys.insert(key) }
            }
            return keys
        }
    }
}
