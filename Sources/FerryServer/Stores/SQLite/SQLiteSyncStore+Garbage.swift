import Foundation
import GRDB

extension SQLiteSyncStore {
    /// Removes tombstones last changed before `cutoff` (DESIGN.md server
    /// semantic 6). The horizon moves to the newest one removed; a cursor
    /// older than the horizon gets a reset. History no longer needed to tell
    /// a base value, and replay results older than the horizon, go too.
    public func collectGarbage(before cutoff: Date) async throws -> GarbageReport {
        let cutoffMilliseconds = Int64((cutoff.timeIntervalSince1970 * 1000).rounded(.down))
        return try await pool.write { db in
            // Notices expire with the tombstone retention.
            try db.execute(sql: "DELETE FROM notices WHERE created_at < ?", arguments: [cutoffMilliseconds])
            var horizon = try Self.meta(db, "horizon")
            guard let newest = try Int64.fetchOne(
                db,
                sql: "SELECT MAX(version) FROM rows WHERE deleted = 1 AND changed_at < ?",
                arguments: [cutoffMilliseconds]
            ), newest > horizon else {
                return GarbageReport(horizon: horizon, tombstonesRemoved: 0)
            }
            horizon = newest
            try db.execute(
                sql: """
                    DELETE FROM history WHERE EXISTS (
                        SELECT 1 FROM rows r
                        WHERE r.scope = history.scope AND r.tbl = history.tbl AND r.row_id = history.row_id
                        AND r.deleted = 1 AND r.version <= ?)
                    """,
                arguments: [horizon]
            )
            try db.execute(sql: "DELETE FROM rows WHERE deleted = 1 AND version <= ?", arguments: [horizon])
            let removed = db.changesCount
            // Keep, per column, the newest value at or below the horizon: it is
            // the value at any base a client can still hold.
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
            try db.execute(sql: "DELETE FROM results WHERE version < ?", arguments: [horizon])
            try db.execute(sql: "UPDATE store_meta SET value = ? WHERE key = 'horizon'", arguments: [horizon])
            return GarbageReport(horizon: horizon, tombstonesRemoved: removed)
        }
    }
}
