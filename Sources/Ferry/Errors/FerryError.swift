/// The error the Ferry client library throws.
///
/// Switch on ``code`` to react; ``message`` tells a person what went wrong and
/// what to do about it.
///
/// ```swift
/// do {
///     _ = try FerryDatabase(path: path, schema: schema)
/// } catch let error as FerryError where error.code == .invalidSyncedTable {
///     print(error.message)   // names the table and column, and says what to do
/// }
/// ```
public struct FerryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A synced table declaration does not fit the table in the database.
        public static let invalidSyncedTable = Code(rawValue: "invalidSyncedTable")
        /// Encryption was asked for but cannot be applied.
        public static let encryptionUnavailable = Code(rawValue: "encryptionUnavailable")
        /// The encryption key provider failed or returned an unusable key.
        public static let invalidEncryptionKey = Code(rawValue: "invalidEncryptionKey")
        /// A configuration value is out of range.
        public static let invalidConfiguration = Code(rawValue: "invalidConfiguration")
        /// A migrated database's schema differs from a fresh install's.
        public static let schemaMismatch = Code(rawValue: "schemaMismatch")
        /// A schema version or migration identifier is unknown.
        public static let unknownSchemaVersion = Code(rawValue: "unknownSchemaVersion")
        /// An outbox entry is not in the state the operation needs.
        public static let outboxStateMismatch = Code(rawValue: "outboxStateMismatch")
        /// The conflict was already resolved or dismissed.
        public static let conflictNotFound = Code(rawValue: "conflictNotFound")
        /// An attachment file could not be written, moved or read.
        public static let attachmentFileFailed = Code(rawValue: "attachmentFileFailed")
        /// No such attachment, or its row or table is not synced.
        public static let attachmentNotFound = Code(rawValue: "attachmentNotFound")
        /// An attachment's bytes do not hash to its SHA-256: never returned.
        public static let attachmentCorrupted = Code(rawValue: "attachmentCorrupted")
        /// The server refused the token and no refreshed one was available.
        public static let unauthorized = Code(rawValue: "unauthorized")
        /// The server could not be reached, or kept failing, within the attempts allowed.
        public static let serverUnavailable = Code(rawValue: "serverUnavailable")
        /// The server refused a request the engine cannot fix by itself.
        public static let serverRefused = Code(rawValue: "serverRefused")
        /// The device has no space left for a write, or for an attachment's
        /// file: the write was rolled back whole and everything committed
        /// before it is kept. Free space and write again; a sync that met it
        /// resumes where it was.
        public static let storageFull = Code(rawValue: "storageFull")
        /// Another sync of the same database file (another engine, another
        /// process) ran past ``SyncConfiguration/syncLockWait``: one sync
        /// runs at a time per file. Nothing was changed; sync again later.
        public static let syncAlreadyRunning = Code(rawValue: "syncAlreadyRunning")
    }

    /// What kind of failure this is.
    public let code: Code
    /// What went wrong and what to do about it.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "FerryError.\(code): \(message)" }
}

/// Matches errors by code in `catch` patterns:
/// `catch FerryError.Code.invalidSyncedTable { ... }`.
public func ~= (code: FerryError.Code, error: any Error) -> Bool {
    (error as? FerryError)?.code == code
}
