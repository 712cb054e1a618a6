import Foundation

/// How one database keeps its attachment files: where they live, which
/// tables download eagerly, the cache limit, and the files this process is
/// writing right now (which maintenance must not take for orphans).
final class AttachmentSettings: Sendable {
    let root: URL?
    let format: AttachmentFileFormat
    let downloads: [String: AttachmentDownloadPolicy]
    let cacheLimit: Int64?
    let steps: (@Sendable (AttachmentStep) -> Void)?
    /// Attachment ids an add or a download of this process is working on,
    /// and, while a maintenance pass runs, the ids that finished since it
    /// began (their files may be on disk though the pass read the database
    /// before they committed).
    let inFlight = Locked<Work>(Work())
    /// Downloads of one attachment take turns.
    let downloadTurns = KeyedTurns()

    struct Work: Sendable {
        var marks: [String: Int] = [:]
        var passes = 0
        var finishedDuringPass: Set<String> = []
    }

    /// Whether the directory's `format` file has been checked against `format`.
    private let formatChecked = Locked<Bool>(false)

    init(
        root: URL?, cipher: (any AttachmentCipher)?, downloads: [String: AttachmentDownloadPolicy], cacheLimit: Int64?,
        steps: (@Sendable (AttachmentStep) -> Void)?
    ) {
        self.root = root
        self.format = AttachmentFileFormat(cipher: cipher)
        self.downloads = downloads
        self.cacheLimit = cacheLimit
        self.steps = steps
    }

    /// The attachment files, once the directory is known to be in this
    /// database's format.
    ///
    /// - throws: ``FerryError`` `.invalidConfiguration` with no directory, or
    ///   one whose files are in the other format (sealed, or plain).
    func files() throws -> AttachmentFiles {
        guard let root else {
            throw FerryError(
                .invalidConfiguration,
                "this database has no file to keep attachments beside; set FerryConfiguration.attachmentsDirectory")
        }
        let files = AttachmentFiles(root: root, format: format)
        guard !formatChecked.withLock({ $0 }) else { return files }
        try checkFormat(of: files)
        formatChecked.withLock { $0 = true }
        return files
    }

    /// Reads the directory's `format` file, or writes it for a new directory.
    private func checkFormat(of files: AttachmentFiles) throws {
        let marker = files.root.appending(path: "format")
        if let found = try? String(contentsOf: marker, encoding: .utf8) {
            if let refusal = format.refusal(of: found) {
                throw FerryError(.invalidConfiguration, "the attachment files in \(files.root.path) \(refusal); open it as they were written")
            }
            return
        }
        // A directory from before the `format` file holds plain files.
        let existing = (try? FileManager.default.contentsOfDirectory(atPath: files.attachments.path)) ?? []
        if format.isSealed, !existing.isEmpty {
            throw FerryError(
                .invalidConfiguration,
                "\(files.root.path) already holds plain attachment files; sealing applies to a new attachments directory")
        }
        try FileManager.default.createDirectory(at: files.root, withIntermediateDirectories: true)
        try Data(try format.marker().utf8).write(to: marker, options: .atomic)
    }

    /// Runs `body` with `names` marked as in flight (nested marks count).
    func working<T>(on names: [String], _ body: () async throws -> T) async rethrows -> T {
        inFlight.withLock { work in for name in names { work.marks[name, default: 0] += 1 } }
        defer {
            inFlight.withLock { work in
                for name in names {
                    work.marks[name, default: 1] -= 1
                    if work.marks[name] == 0 { work.marks[name] = nil }
                    if work.passes > 0 { work.finishedDuringPass.insert(name) }
                }
            }
        }
        return try await body()
    }

    func isInFlight(_ name: String) -> Bool {
        inFlight.withLock { $0.marks[name] != nil }
    }

    /// Runs a maintenance pass: `body` is given, when it asks, every id in
    /// flight now or finished since the pass began, so it never takes the
    /// file of an add that committed after it read the database for orphan.
    func maintenancePass<T>(_ body: (_ protected: () -> Set<String>) async throws -> T) async rethrows -> T {
        inFlight.withLock { $0.passes += 1 }
        defer {
            inFlight.withLock { work in
                work.passes -= 1
                if work.passes == 0 { work.finishedDuringPass = [] }
            }
        }
        return try await body { self.inFlight.withLock { Set($0.marks.keys).union($0.finishedDuringPass) } }
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
