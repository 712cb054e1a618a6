import FerryProtocol

/// What the admin API reads and changes in a store besides sync: scopes
/// and members, rows by table, the change feed, the devices that push, and
/// where each webhook's deliveries stand. Every ``SyncStore`` provides it.
///
/// ```swift
/// let page = try await store.changes(after: nil, scope: "user:alice", table: nil, limit: 100)
/// for change in page.changes { print(change.table, change.rowID, change.version) }
/// let next = try await store.changes(after: page.cursor, scope: "user:alice", table: nil, limit: 100)
/// ```
public protocol StoreAdministration: Sendable {
    /// Shared scopes by name after `after`, with their owners and members.
    func scopes(after: String?, limit: Int) async throws -> [ScopeSummary]

    /// One shared scope, or `nil` when it does not exist.
    func scope(_ scope: String) async throws -> ScopeSummary?

    /// Removes `userID` from a shared scope's members.
    /// - Returns: whether it was a member.
    /// - Throws: ``FerryServerError`` `notFound` when the scope does not exist.
    func removeMember(_ userID: String, from scope: String) async throws -> Bool

    /// A table's rows in one scope by row id after `after`: the live ones,
    /// or with `changedSince` (milliseconds since 1970) every row changed
    /// since then, deletes included.
    func rows(scope: String, table: String, after: String?, changedSince: Int64?, limit: Int) async throws -> [ListedRow]

    /// The rows changed after `cursor` (`nil`: from the beginning), in
    /// commit order, each at its latest version, optionally of one scope
    /// and one table. A cursor points past every change it returned, also
    /// those the filter left out, and is valid with any filter. A cursor
    /// into history the store lost (restored, wiped, another server) starts
    /// over: the feed is at-least-once.
    ///
    /// - Throws: ``FerryServerError`` `badRequest` for a garbled or forged cursor.
    func changes(after cursor: String?, scope: String?, table: String?, limit: Int) async throws -> ChangeFeedPage

    /// The users with a device that pushed, by id after `after`.
    func users(after: String?, limit: Int) async throws -> [String]

    /// A user's devices that pushed, by client id.
    func devices(of userID: String) async throws -> [DeviceSummary]

    /// Takes (or renews) the lease on delivering webhook `name` for
    /// `holder` until `now + lease`, creating its state on first use.
    /// - Returns: where the deliveries stand, or `nil` while another holder's lease runs.
    func leaseWebhook(_ name: String, holder: String, now: Int64, leaseMilliseconds: Int64) async throws -> WebhookState?

    /// Records a delivery attempt's outcome, if `holder` still holds the lease.
    /// - Returns: whether it was recorded.
    func recordWebhook(_ state: WebhookState, holder: String, now: Int64) async throws -> Bool

    /// Every webhook's state, by name.
    func webhookStates() async throws -> [WebhookState]

    /// Unparks webhook `name` and, with a cursor, moves its deliveries back
    /// (or forward) to it; the lease is released, so the next delivery
    /// starts at once.
    /// - Returns: whether the webhook is known.
    func replayWebhook(_ name: String, from start: WebhookReplay) async throws -> Bool
}

/// Where a replayed webhook's deliveries resume.
public enum WebhookReplay: Sendable, Hashable {
    /// After the last batch it delivered.
    case whereItStopped
    /// From the first change the store holds.
    case beginning
    /// After a change feed cursor.
    case cursor(String)
}

/// Where one webhook's deliveries stand, as the store keeps it.
public struct WebhookState: Sendable, Hashable, Codable {
    public var name: String
    /// The change feed cursor after the last delivered batch; `nil` before the first.
    public var cursor: String?
    /// Failed attempts in a row.
    public var failures: Int
    /// Parked after too many failures: nothing is sent until a replay.
    public var parked: Bool
    public var lastError: String?
    /// When the last batch was delivered, in milliseconds since 1970.
    public var deliveredAt: Int64?

    public init(name: String, cursor: String? = nil, failures: Int = 0, parked: Bool = false, lastError: String? = nil, deliveredAt: Int64? = nil) {
        self.name = name
        self.cursor = cursor
        self.failures = failures
        self.parked = parked
        self.lastError = lastError
        self.deliveredAt = deliveredAt
    }
}
