import Foundation

/// How one database keeps its attachment files: where they live, which
/// tables download eagerly, the cache limit, and the files this process is
/// writing right now (which maintenance must not take for orphans).
final class AttachmentSettings: Sendable {
    let root: URL?
    let downloads: [String: AttachmentDownloadPolicy]
    let cacheLimit: Int64?
    let steps: (@Sendable (AttachmentStep) -> Void)?
    /// Attachment ids and staged file names an add or a download of this
    /// process is working on.
    let inFlight = Locked<[String: Int]>([:])

    init(root: URL?, downloads: [String: AttachmentDownloadPolicy], cacheLimit: Int64?,
         steps: (@Sendable (AttachmentStep) -> Void)?) {
        self.root = root
        self.downloads = downloads
        self.cacheLimit = cacheLimit
        self.steps = steps
    }

    /// Runs `body` with `names` marked as in flight (nested marks count).
    func working<T>(on names: [String], _ body: () async throws -> T) async rethrows -> T {
        inFlight.withLock { marks in for name in names { marks[name, default: 0] += 1 } }
        defer {
            inFlight.withLock { marks in
                for name in names {
                    marks[name, default: 1] -= 1
                    if marks[name] == 0 { marks[name] = nil }
                }
            }
        }
        return try await body()
    }

    func isInFlight(_ name: String) -> Bool {
        inFlight.withLock { $0[name] != nil }
    }
}

/// A step of adding or moving an attachment, as told to
/// ``FerryConfiguration/attachmentSteps`` (tests only).
@_spi(Testing) public enum AttachmentStep: Sendable, Hashable {
    /// The bytes are in `staging/`, synced, not yet renamed.
    case staged
    /// Renamed into `attachments/`; the metadata is not written yet.
    case placed
    /// The metadata is written inside the transaction, not yet committed.
    case recorded
    /// The transaction committed.
    case committed
    /// An upload has sent this many of the blob's bytes.
    case uploaded(Int64)
    /// A download holds this many of the blob's bytes in `temp/`.
    case downloaded(Int64)
}
