import FerryProtocol
import GRDB

/// Conflicts are the user's, not a device's: a conflict resolved or
/// dismissed on one device is settled on every device of the user.
///
/// Settling a conflict that came with a notice id (a notice, or a push
/// reply whose loss the server also told the user's other devices of)
/// queues the id here, in the settling transaction. The next push carries
/// the queue (``PushRequest/settled``); the server records a settlement in
/// the notice stream, and every other device of the user drops its copy
/// when it pulls it (``PullPage/settledNotices``).
///
/// ```swift
/// try database.conflicts.resolve(conflict, with: .theirs)   // queued here
/// try await engine.sync()                                   // sent; the phone drops it at its next sync
/// ```
enum SettledNotices {
    /// At most this many go with one push (the server's limit).
    static let batchLimit = 1000

    /// Queues the notice a settled conflict came with, if any.
    static func settle(_ record: ConflictRecord, _ db: Database) throws {
        guard let noticeID = record.noticeID else { return }
        try db.execute(
            sql: "INSERT OR IGNORE INTO ferry_settled_notices(scope, notice_id) VALUES (?, ?)",
            arguments: [record.scope, noticeID])
    }

    /// The settlements not yet sent (at most ``batchLimit``).
    static func pending(_ db: Database) throws -> [PushRequest.SettledNotice] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT scope, notice_id FROM ferry_settled_notices LIMIT ?"), arguments: [batchLimit])
            .map { PushRequest.SettledNotice(scope: $0["scope"], id: $0["notice_id"]) }
    }

    /// Forgets settlements the server acknowledged.
    static func sent(_ settled: [PushRequest.SettledNotice], _ db: Database) throws {
        let statement = try db.cachedStatement(sql: "DELETE FROM ferry_settled_notices WHERE scope = ? AND notice_id = ?")
        for notice in settled { try statement.execute(arguments: [notice.scope, notice.id]) }
    }

    /// Drops the conflicts the user settled on another device.
    static func drop(_ ids: [String], scope: String, _ db: Database) throws -> Int {
        guard !ids.isEmpty else { return 0 }
        return try ConflictRecord.filter(ids.contains(ConflictRecord.Columns.noticeID) && ConflictRecord.Columns.scope == scope)
            .deleteAll(db)
    }
}
