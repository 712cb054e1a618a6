import Foundation

/// Where the sync engine stands, as ``SyncEngine/statusUpdates()`` yields it.
///
/// ```swift
/// for await status in engine.statusUpdates() {
///     label.text = "\(status.phase) · \(status.pendingCount) to send · \(status.conflictCount) conflicts"
/// }
/// ```
public struct SyncStatus: Sendable, Hashable {
    /// What the engine is doing.
    public enum Phase: String, Sendable, Hashable {
        /// Not syncing right now.
        case idle
        /// Sending local changes.
        case pushing
        /// Fetching and applying server changes.
        case pulling
        /// Waiting before a retry after a transient failure.
        case backingOff
        /// The server refused the token and no refreshed one is available.
        case unauthorized
    }

    public var phase: Phase = .idle
    /// Rows with local changes not yet acknowledged by the server: the
    /// same count as ``Outbox/pendingCount()``. While a sync pushes many
    /// batches it is counted at most once a second (a count reads every
    /// pending row), beside the pushes, and shown by the push that follows
    /// it (the batches on the wire meanwhile still count); it is counted
    /// again when the sync ends.
    public var pendingCount = 0
    /// Mutations acknowledged by the server in the current (or last) sync.
    public var pushed = 0
    /// Rows pulled in the current (or last) sync.
    public var pulled = 0
    /// About how many rows the current (or last) sync pulls in all, once
    /// the server estimated it (a first sync of a scope, or a scope started
    /// over); `nil` when no page said. Never below ``pulled``, never smaller
    /// than before while the pull runs, equal to ``pulled`` once it ends,
    /// and `nil` again if the sync stopped or failed.
    ///
    /// ```swift
    /// for await status in engine.statusUpdates() where status.phase == .pulling {
    ///     if let total = status.pullEstimate { print("\(status.pulled) of about \(total)") }
    /// }
    /// ```
    public var pullEstimate: Int?
    /// When a sync last completed.
    public var lastSuccessfulSync: Date?
    /// The last failure, cleared by the next success.
    public var lastError: String?
    /// Conflicts awaiting the app.
    public var conflictCount = 0
    /// Mutations the server rejected, set aside.
    public var rejectedCount = 0
    /// Whether the live stream is connected.
    public var liveConnected = false
    /// Background triggers that failed and are restarting with backoff, by
    /// source (`observation`, `timer`, `live`), with the error; a source
    /// leaves once it runs again. The other sources keep syncing meanwhile.
    public var backgroundIssues: [String: String] = [:]

    public init() {}
}

/// What one ``SyncEngine/sync()`` did.
public struct SyncSummary: Sendable, Hashable {
    /// Mutations the server acknowledged (applied, merged or in conflict).
    public var pushed = 0
    /// Mutations acknowledged with a conflict report.
    public var conflicts = 0
    /// Mutations the server rejected, now set aside.
    public var rejected = 0
    /// Rows pulled (written, deleted or kept).
    public var pulled = 0
    /// Pulled rows that could not be applied and were set aside.
    public var setAside: [SetAsideRow] = []
    /// Local rows removed after a reset because the server no longer has them.
    public var swept = 0
    /// Rows queued to go back to a server that lost history (restored from
    /// a backup, or wiped): it lacked them, or held older values. They are
    /// pushed in the same sync.
    public var sentBack = 0
    /// Scopes refetched from scratch after the server reset their cursors.
    public var resets = 0
    /// The database turned out to be a restored older copy and took a new client id.
    public var identityRenewed = false
    /// Attempts that failed transiently and were retried.
    public var retries = 0
    /// Time spent waiting for the server (requests in flight).
    public var waitingForServer: Duration = .zero
    /// Time spent in the local database (batches, replies, pages). In a
    /// push of several batches, the next batch is taken while the last one
    /// is in flight, so the two times overlap: their sum can exceed the
    /// sync's.
    public var inDatabase: Duration = .zero
    /// Followed scopes the server refused to pull (the user is no longer a
    /// member, say); the others were pulled.
    /// Attachments whose bytes this sync sent to the server whole.
    public var attachmentsUploaded = 0
    /// Attachments of eager tables whose bytes this sync fetched.
    public var attachmentsDownloaded = 0
    /// Attachment transfers that failed (each is retried at the next sync).
    public var attachmentTransfersFailed = 0
    public var refusedScopes: [String] = []

    public init() {}

    /// The push did not leave every change as written (a conflict, a
    /// rejection), or the run recovered (edits sent back, a new identity):
    /// only a full sync brings the server's state.
    var needsPull: Bool {
        conflicts > 0 || rejected > 0 || !setAside.isEmpty || sentBack > 0 || identityRenewed || resets > 0
    }

    /// This push-only summary, then the sync that followed it, as one.
    func followed(by sync: SyncSummary) -> SyncSummary {
        var both = sync
        both.pushed += pushed
        both.conflicts += conflicts
        both.rejected += rejected
        both.setAside = setAside + sync.setAside
        both.swept += swept
        both.sentBack += sentBack
        both.identityRenewed = identityRenewed || sync.identityRenewed
        both.retries += retries
        both.waitingForServer += waitingForServer
        both.inDatabase += inDatabase
        both.attachmentsUploaded += attachmentsUploaded
        both.attachmentTransfersFailed += attachmentTransfersFailed
        return both
    }
}

/// Holds the latest status and hands it to every listener.
final class StatusBroadcaster: Sendable {
    private struct State {
        var status = SyncStatus()
        var listeners: [UUID: AsyncStream<SyncStatus>.Continuation] = [:]
    }

    private let state = Locked(State())

    var current: SyncStatus { state.withLock { $0.status } }

    func update(_ change: (inout SyncStatus) -> Void) {
        // Yielded under the lock (yield never blocks), so listeners see
        // updates in the order they were made.
        state.withLock { state in
            let before = state.status
            change(&state.status)
            guard state.status != before else { return }
            for listener in state.listeners.values { listener.yield(state.status) }
        }
    }

    func stream() -> AsyncStream<SyncStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncStatus.self, bufferingPolicy: .bufferingNewest(16))
        let id = UUID()
        let status = state.withLock { state in
            state.listeners[id] = continuation
            return state.status
        }
        continuation.yield(status)
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.listeners.removeValue(forKey: id) }
        }
        return stream
    }

    func finish() {
        let listeners = state.withLock { state in
            defer { state.listeners = [:] }
            return Array(state.listeners.values)
        }
        for listener in listeners { listener.finish() }
    }
}
