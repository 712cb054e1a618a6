import Foundation
import Logging

/// How ``FerryDatabase`` opens and runs its SQLite database.
///
/// The defaults: WAL, `synchronous=NORMAL`, foreign keys on,
/// a 5 s busy timeout, IMMEDIATE write transactions, `temp_store=MEMORY`, and
/// `PRAGMA optimize` on open.
///
/// ```swift
/// var configuration = FerryConfiguration()
/// configuration.synchronous = .full          // survive power loss, at a cost
/// configuration.maximumReaderCount = 8
/// configuration.busyTimeout = .seconds(10)
/// let database = try FerryDatabase(path: path, schema: schema, configuration: configuration)
/// ```
public struct FerryConfiguration: Sendable {
    /// SQLite's `synchronous` setting for the writer.
    public enum Synchronous: String, Sendable, Hashable {
        /// Durable across app crashes; a power loss may roll back the last commits.
        case normal = "NORMAL"
        /// Durable across power loss; every commit waits for the disk.
        case full = "FULL"
    }

    /// `synchronous` for the writer connection. Default `.normal`.
    public var synchronous: Synchronous = .normal
    /// The largest number of concurrent reader connections. Default 5.
    public var maximumReaderCount = 5
    /// How long a write waits for another process's lock before failing
    /// with `SQLITE_BUSY`. Default 5 seconds.
    public var busyTimeout: Duration = .seconds(5)
    /// Write transactions open longer than this are logged as warnings.
    public var longTransactionThreshold: Duration = .milliseconds(500)
    /// The SQLCipher key source. `nil` (the default) stores the database unencrypted.
    public var encryption: (any DatabaseKeyProvider)?
    /// Physical time for the edit clock. Tests inject their own.
    public var wallClock: any WallClock = SystemWallClock()
    /// Where warnings go.
    public var logger = Logger(label: "ferry.database")
    /// A name for the connections, shown in logs.
    public var label = "ferry"
    /// Where attachment files live (`staging/`, `temp/`, `attachments/`);
    /// `nil`: the database file's directory. An in-memory database needs one
    /// to hold attachments.
    public var attachmentsDirectory: URL?
    /// When each table's attachments added on other devices download: at
    /// once after a sync (`.eager`), or when first opened (the default).
    public var attachmentDownloads: [String: AttachmentDownloadPolicy] = [:]
    /// The most bytes of attachment files kept on this device; `nil` (the
    /// default): no limit. Past it, the files opened least recently are
    /// evicted (they download again when opened). A file whose bytes or row
    /// the server does not hold yet is never evicted, and eviction never
    /// touches the server's copy.
    public var attachmentCacheLimit: Int64?
    /// Seals attachment files at rest, chunk by chunk (`nil`, the default:
    /// files hold the bytes as they are). `AESGCMAttachmentCipher`, in the
    /// `FerryAttachmentEncryption` product, is AES-GCM with a key from a key
    /// provider. Sealed files are read back with ``Attachments/data(for:)``
    /// and ``Attachments/export(_:to:)``, which check every chunk: a
    /// changed or cut file is refused, never returned. Set it when the
    /// attachments directory is first used.
    public var attachmentCipher: (any AttachmentCipher)?
    /// Tests only: told of each step of adding and transferring an
    /// attachment, so a crash test can kill the process at that step.
    @_spi(Testing) public var attachmentSteps: (@Sendable (AttachmentStep) -> Void)?

    /// Called with every SQL statement run, arguments expanded (`nil`, the
    /// default: none). For debugging; the expanded arguments hold the
    /// app's data, so keep it out of production logs.
    public var sqlTrace: (@Sendable (String) -> Void)?

    public init() {}

    func validate() throws {
        guard maximumReaderCount >= 1 else {
            throw FerryError(.invalidConfiguration, "maximumReaderCount must be at least 1, got \(maximumReaderCount)")
        }
        guard busyTimeout >= .zero else {
            throw FerryError(.invalidConfiguration, "busyTimeout cannot be negative, got \(busyTimeout)")
        }
    }

    var busyTimeoutMilliseconds: Int {
        let (seconds, attoseconds) = busyTimeout.components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }
}
