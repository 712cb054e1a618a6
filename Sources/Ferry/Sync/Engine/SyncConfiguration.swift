import FerryProtocol

/// What the sync engine follows, how much it moves at once, and when it
/// syncs by itself.
///
/// ```swift
/// var configuration = SyncConfiguration(userID: "alice", sharedScopes: ["team-blue"])
/// configuration.pushBatchSize = 200
/// configuration.periodicInterval = .seconds(60)
/// ```
public struct SyncConfiguration: Sendable, Hashable {
    /// The signed-in user: rows of tables scoped `.user` sync in `user:<userID>`.
    public var userID: String
    /// Shared scopes to follow besides the user's own.
    public var sharedScopes: [String]
    /// Mutations per push request (the server accepts up to 1,000 by default).
    /// A push of several full batches takes each next batch while the last
    /// one is in flight, and sends it once the last one's reply is recorded.
    public var pushBatchSize: Int
    /// Rows per pulled page (the server caps it at 5,000 by default).
    public var pullPageSize: Int
    /// After a local write, how long the engine waits for more before it
    /// syncs (once started).
    public var debounce: Duration
    /// How often the engine syncs with no other reason (once started);
    /// `nil` never.
    public var periodicInterval: Duration?
    /// Whether the started engine listens on the server's live endpoint.
    public var live: Bool
    /// Backoff for transient failures.
    public var retry: RetryPolicy
    /// How many times one mutation, pushed alone, may meet a server error
    /// (5xx other than 502–504) before it is set aside like a rejection,
    /// with the last error, so it cannot hold the queue forever. Resend or
    /// discard it from ``Outbox/rejectedMutations()``.
    public var poisonAttempts = 5
    /// What the device does when the server lost the history its cursors
    /// came from (restored from a backup, wiped, or another server).
    public var lostServerHistory = LostServerHistory.sendBack
    /// How long a sync waits for another sync of the same database file
    /// (another engine or process: one runs at a time per file) before it
    /// throws ``FerryError/Code/syncAlreadyRunning``.
    public var syncLockWait: Duration = .seconds(60)

    public init(
        userID: String, sharedScopes: [String] = [], pushBatchSize: Int = 500, pullPageSize: Int = 1000,
        debounce: Duration = .milliseconds(200), periodicInterval: Duration? = .seconds(300),
        live: Bool = true, retry: RetryPolicy = RetryPolicy()
    ) {
        self.userID = userID
        self.sharedScopes = sharedScopes
        self.pushBatchSize = pushBatchSize
        self.pullPageSize = pullPageSize
        self.debounce = debounce
        self.periodicInterval = periodicInterval
        self.live = live
        self.retry = retry
    }

    /// What a device does when the server it syncs with lost history.
    ///
    /// ```swift
    /// var configuration = SyncConfiguration(userID: "alice")
    /// configuration.lostServerHistory = .mirror   // this device moved to another server on purpose
    /// ```
    public enum LostServerHistory: Sendable, Hashable {
        /// Keep every row and send back what the server lacks: rows it does
        /// not return, and values newer than its own, merged under each
        /// table's policy so every other device receives them too. A row
        /// deleted in the lost history may come back. The default: a device
        /// never deletes a row because a server forgot it.
        case sendBack
        /// Take the server's data as it is: rows it does not return are
        /// removed from this device, as after an ordinary reset. For a
        /// device pointed at a different server on purpose.
        case mirror
    }

    /// The user's own scope, `user:<userID>`.
    public var userScope: String { ScopeName.user(userID) }

    /// Every scope pulled: the user's own, then the shared ones.
    public var scopes: [String] {
        var seen: Set<String> = []
        return ([userScope] + sharedScopes).filter { seen.insert($0).inserted }
    }

    func validate() throws {
        guard ScopeName.isValidUserID(userID) else {
            throw FerryError(.invalidConfiguration, "`\(userID)` is not a valid user id: use 1–128 characters, no `:`")
        }
        for scope in sharedScopes where !ScopeName.isValid(scope) {
            throw FerryError(.invalidConfiguration, "`\(scope)` is not a valid scope name")
        }
        guard (1...1000).contains(pushBatchSize), (1...5000).contains(pullPageSize) else {
            throw FerryError(
                .invalidConfiguration,
                "pushBatchSize must be 1–1000 and pullPageSize 1–5000; got \(pushBatchSize) and \(pullPageSize)")
        }
        guard debounce >= .zero, (periodicInterval ?? .seconds(1)) > .zero else {
            throw FerryError(.invalidConfiguration, "debounce must be ≥ 0 and periodicInterval > 0")
        }
        guard poisonAttempts >= 1 else {
            throw FerryError(.invalidConfiguration, "poisonAttempts must be at least 1; got \(poisonAttempts)")
        }
        try retry.validate()
    }
}
