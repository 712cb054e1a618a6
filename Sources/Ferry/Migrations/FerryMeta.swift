import GRDB

/// Ferry's key-value settings in `ferry_meta`: the client id, the saved
/// clock, cursors and settings.
enum FerryMeta {
    struct Key: RawRepresentable, Hashable, Sendable {
        var rawValue: String
        /// The device's client id, made once when Ferry's tables are created.
        static let clientID = Key(rawValue: "clientID")
        /// The highest HLC stamp issued before outbox entries were purged,
        /// or received in a pulled row.
        static let hlc = Key(rawValue: "hlc")
        /// The last mutation id handed to a push.
        static let lastMutationID = Key(rawValue: "lastMutationID")
        /// The highest id a push reply said the server applied for this
        /// client id: a server that later says less lost history.
        static let lastAcknowledged = Key(rawValue: "lastAcknowledged")
        /// The columns of each synced table at the last pull, as JSON: a
        /// column added since makes the engine refetch.
        static let syncedColumns = Key(rawValue: "syncedColumns")
        /// The Unix milliseconds of the last sync that completed.
        static let lastSyncAt = Key(rawValue: "lastSyncAt")
    }

    static func value<T: DatabaseValueConvertible>(_ key: Key, in db: Database) throws -> T? {
        try T.fetchOne(db.cachedStatement(sql: "SELECT value FROM ferry_meta WHERE key = ?"), arguments: [key.rawValue])
    }

    static func setValue(_ value: (any DatabaseValueConvertible)?, for key: Key, in db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO ferry_meta(key, value) VALUES (?, ?)
                ON CONFLICT(key) DO UPDATE SET value = excluded.value
                """
        ).execute(arguments: [key.rawValue, value])
    }
}
