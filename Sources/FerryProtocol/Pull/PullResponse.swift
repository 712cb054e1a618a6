/// The reply to a pull, read from one consistent snapshot of the server.
///
/// `lastAppliedMutationID` comes from the same snapshot as the pages: every
/// mutation at or below it is already reflected in them, so the client may
/// drop those from its outbox and take the pulled values.
///
/// ```swift
/// for page in response.pages {
///     if page.lostHistory { /* the server lost history: keep every row, send back what it lacks */ }
///     else if page.reset { /* refetching: rows of the scope not sent again are gone */ }
///     for change in page.changes { apply(change) }
///     save(page.cursor, for: page.scope)
/// }
/// ```
public struct PullResponse: Sendable, Hashable, Codable {
    public var lastAppliedMutationID: Int64
    public var pages: [PullPage]

    public init(lastAppliedMutationID: Int64, pages: [PullPage]) {
        self.lastAppliedMutationID = lastAppliedMutationID
        self.pages = pages
    }
}

/// Changed rows of one scope, oldest change first.
public struct PullPage: Sendable, Hashable, Codable {
    public var scope: String
    public var changes: [RowChange]
    /// Where the next pull of this scope starts. Opaque.
    public var cursor: String
    /// More changes wait: pull again with `cursor` right away.
    public var hasMore: Bool
    /// The given cursor was too old (past the tombstone horizon) or from
    /// another server epoch. This page starts the scope from scratch: the
    /// client refetches it, keeps its outbox and re-applies pending changes.
    public var reset: Bool
    /// The reset is because the server lost the history the cursor came
    /// from: it was restored from a backup, wiped, or is another server.
    /// Rows it does not send again were *not* deleted; the client keeps
    /// them and sends back what the server lacks.
    /// Only ever set with ``reset``.
    public var lostHistory: Bool
    /// Values of this user's, in this scope, that another writer's later
    /// edit or delete discarded (see ``ConflictNotice``).
    public var notices: [ConflictNotice]
    /// Where the next pull's notices start: send it back as
    /// ``PullRequest/ScopeCursor/notices``. Opaque.
    public var noticeCursor: String?
    /// Ids of notices in this scope that the user settled on another
    /// device (resolved or dismissed there): drop them here too.
    public var settledNotices: [String]
    /// On the first page of a scope sent from scratch (a first pull or a
    /// ``reset``): about how many rows the whole of it sends, this page's
    /// included, counted in the page's snapshot. Rows written meanwhile make
    /// the real count differ; a progress display takes it as an estimate.
    /// `nil` on every other page.
    public var estimatedRows: Int?
    /// On a page from the live stream: the cursor it continues from. The
    /// page holds every change after that cursor up to ``cursor``, as a pull
    /// from it would, so a client whose cursor for the scope is this one
    /// (Ferry's own client: or any between the two, `CursorOrder`) applies
    /// the page and moves its cursor to ``cursor``, and the next pull does not
    /// download the rows again; any other client applies the rows and keeps
    /// its cursor. So does a client with pending edits to a row of the page,
    /// or one refetching the scope: its next pull brings the rows whole.
    /// `nil` on a pulled page.
    public var after: String?

    public init(
        scope: String, changes: [RowChange], cursor: String, hasMore: Bool, reset: Bool, lostHistory: Bool = false,
        notices: [ConflictNotice] = [], noticeCursor: String? = nil, settledNotices: [String] = [], estimatedRows: Int? = nil,
        after: String? = nil
    ) {
        self.scope = scope
        self.changes = changes
        self.cursor = cursor
        self.hasMore = hasMore
        self.reset = reset
        self.lostHistory = lostHistory
        self.notices = notices
        self.noticeCursor = noticeCursor
        self.settledNotices = settledNotices
        self.estimatedRows = estimatedRows
        self.after = after
    }

    private enum CodingKeys: String, CodingKey {
        case scope, changes, cursor, hasMore, reset, lostHistory, notices, noticeCursor, settledNotices, estimatedRows, after
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        scope = try container.decode(String.self, forKey: .scope)
        changes = try container.decode([RowChange].self, forKey: .changes)
        cursor = try container.decode(String.self, forKey: .cursor)
        hasMore = try container.decode(Bool.self, forKey: .hasMore)
        reset = try container.decode(Bool.self, forKey: .reset)
        lostHistory = try container.decodeIfPresent(Bool.self, forKey: .lostHistory) ?? false
        notices = try container.decodeIfPresent([ConflictNotice].self, forKey: .notices) ?? []
        noticeCursor = try container.decodeIfPresent(String.self, forKey: .noticeCursor)
        settledNotices = try container.decodeIfPresent([String].self, forKey: .settledNotices) ?? []
        estimatedRows = try container.decodeIfPresent(Int.self, forKey: .estimatedRows)
        after = try container.decodeIfPresent(String.self, forKey: .after)
    }
}

/// One row as the server holds it now.
public struct RowChange: Sendable, Hashable, Codable {
    public var table: String
    public var rowID: String
    /// The row's server version: the base of the client's next edit to it.
    public var version: Int64
    /// The row is deleted; `values` is empty.
    public var deleted: Bool
    /// Every column's current value.
    public var values: [String: ColumnValue]
    /// The newest edit stamp among the row's values: a device that applies
    /// the row moves its clock past it, so its next edit orders after this
    /// one under last-write-wins whatever the wall clocks say.
    public var hlc: HLCTimestamp?

    public init(
        table: String, rowID: String, version: Int64, deleted: Bool, values: [String: ColumnValue],
        hlc: HLCTimestamp? = nil
    ) {
        self.table = table
        self.rowID = rowID
        self.version = version
        self.deleted = deleted
        self.values = values
        self.hlc = hlc
    }
}
