import Foundation
import GRDB

/// The device's identity towards the server, and what happens when a
/// database file turns out to be a copy of itself.
///
/// The server remembers the last mutation id it applied for each client. A
/// file restored from a backup numbers its new edits from where the copy
/// stood, and the server would take them for replays and drop them. When the
/// server reports more applied mutations than this file ever handed out, the
/// file takes a new client id and numbers its unsent edits from 1 again.
///
/// A copy that syncs beside its original (a backup restored onto a second
/// phone while the first still syncs) may not be behind when it checks: the
/// server then finds its edits differ from what it applied under their ids
/// (`clientIDReused`), and the copy renews the same way.
enum ClientIdentity {
    /// Whether the server's count proves the file is an older copy.
    static func isRestoredCopy(serverLastApplied: Int64, in db: Database) throws -> Bool {
        let lastAssigned: Int64 = try FerryMeta.value(.lastMutationID, in: db) ?? 0
        return serverLastApplied > lastAssigned
    }

    /// How many mutations the file has handed out (numbered, frozen) and
    /// not yet settled.
    static func handedOut(_ db: Database) throws -> Int {
        try Int.fetchOne(
            db,
            sql: "SELECT count(DISTINCT mutation_id) FROM ferry_outbox WHERE \(OutboxRecord.State.pending.condition) AND mutation_id IS NOT NULL"
        ) ?? 0
    }

    /// Gives the database a new client id. Mutations this copy had handed
    /// out under ids up to `appliedThrough` were applied (the original file
    /// sent them with the same frozen values): they are settled, not sent
    /// again. Every other unsettled mutation is renumbered under the new id
    /// at the next push. Returns the new id.
    @discardableResult
    static func renew(appliedThrough: Int64, now: Int64, in db: Database) throws -> String {
        let applied = try OutboxRecord.all().filter(state: .pending)
            .filter(OutboxRecord.Columns.mutationID != nil && OutboxRecord.Columns.mutationID <= appliedThrough)
            .select(OutboxRecord.Columns.seq, as: Int64.self).fetchAll(db)
        if !applied.isEmpty {
            try Outbox.settle(applied, state: .acknowledged, reason: nil, now: now, in: db)
        }
        let clientID = UUID().uuidString.lowercased()
        try FerryMeta.setValue(clientID, for: .clientID, in: db)
        try FerryMeta.setValue(0, for: .lastAcknowledged, in: db)
        try Outbox.renumber(after: 0, in: db)
        return clientID
    }
}
