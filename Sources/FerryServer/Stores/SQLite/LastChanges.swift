import Synchronization

/// What the embedded store's own commits say about where each scope and
/// client stands, kept in memory, so a pull of a scope nothing changed in is
/// answered without a read transaction (``SQLiteSyncStore`` answers from it
/// when every followed scope is quiet).
///
/// Every figure is an upper bound of what the committed file holds. A row
/// gets a version, and a notice an id, only in the store's push, which
/// reports each commit here (``committed(_:)``), in the writer, before the
/// push returns. So a scope this type has not heard of since the store
/// opened last changed at or before the floors: the version and notice id
/// the file held when it opened, or when the table was last emptied to stay
/// within ``capacity``. An upper bound can only send a pull to the file; it
/// never lets one skip a row.
///
/// A user's notices in a scope are bounded the same way, but a floor set
/// from every user's notices would hold back every device whose user had
/// none lately; so a pull that reads the file teaches where each of its
/// scopes' notices end for its user (``learn(_:since:)``).
///
/// A client's last applied mutation id is the opposite: it must never be
/// *ahead* of the file, or a device would drop edits the store never
/// applied. It comes only from a commit or from a read of the file, and is
/// absent until then.
///
/// ```swift
/// var changes = LastChanges(version: 40, horizon: 0, lastNotice: 3)
/// changes.committed(.init(version: 41, rowScopes: ["user:alice"], client: alice, lastApplied: 7))
/// changes.lastChange(of: "user:alice", for: "alice")   // row 41, notice 3
/// changes.lastChange(of: "user:bob", for: "bob")       // row 40, notice 3: the floors
/// changes.lastApplied(by: alice)         // 7
/// ```
package struct LastChanges: Sendable {
    /// One device of one user.
    package struct Client: Hashable, Sendable {
        package var userID: String
        package var clientID: String

        package init(userID: String, clientID: String) {
            self.userID = userID
            self.clientID = clientID
        }
    }

    /// One user's notices in one scope: what a device's notice cursor walks.
    package struct Notices: Hashable, Sendable {
        package var userID: String
        package var scope: String

        package init(userID: String, scope: String) {
            self.userID = userID
            self.scope = scope
        }
    }

    /// What one committed push changed.
    package struct Commit: Sendable {
        /// The store's version after it.
        package var version: Int64
        /// The scopes whose rows it wrote (at `version`).
        package var rowScopes: Set<String> = []
        /// The users and scopes it added notices or settlements for.
        package var notices: Set<Notices> = []
        /// The newest notice id after it, if it added any.
        package var lastNotice: Int64? = nil
        /// The pushing device and its last applied mutation id after it.
        package var client: Client
        package var lastApplied: Int64

        package init(
            version: Int64, rowScopes: Set<String> = [], notices: Set<Notices> = [], lastNotice: Int64? = nil, client: Client,
            lastApplied: Int64
        ) {
            self.version = version
            self.rowScopes = rowScopes
            self.notices = notices
            self.lastNotice = lastNotice
            self.client = client
            self.lastApplied = lastApplied
        }
    }

    /// What a pull read from the file, on one snapshot.
    package struct Read: Sendable {
        /// The store's version in the snapshot.
        package var version: Int64
        package var client: Client
        package var lastApplied: Int64
        /// For each scope the pull read every notice of: a bound on the
        /// user's newest notice id there (where its notice cursor now stands).
        package var notices: [Notices: Int64] = [:]

        package init(version: Int64, client: Client, lastApplied: Int64, notices: [Notices: Int64] = [:]) {
            self.version = version
            self.client = client
            self.lastApplied = lastApplied
            self.notices = notices
        }
    }

    /// The newest version in the store.
    package private(set) var version: Int64
    /// The newest version of a collected tombstone.
    package private(set) var horizon: Int64
    /// How many scopes, notice walks and clients it keeps before it
    /// empties a table and raises its floor to now.
    package let capacity: Int
    /// Bumped each time the notice or client table is emptied: a read of
    /// the file from before then is not learned (``learn(_:since:)``).
    package private(set) var generation: UInt64 = 0

    private var lastNotice: Int64
    private var rowFloor: Int64
    private var noticeFloor: Int64
    private var rows: [String: Int64] = [:]
    private var notices: [Notices: Int64] = [:]
    private var clients: [Client: Int64] = [:]

    /// Starts from what the file holds when the store opens.
    package init(version: Int64, horizon: Int64, lastNotice: Int64, capacity: Int = 100_000) {
        self.version = version
        self.horizon = horizon
        self.lastNotice = lastNotice
        self.rowFloor = version
        self.noticeFloor = lastNotice
        self.capacity = max(1, capacity)
    }

    /// The newest row version of `scope`, and the newest id of `userID`'s
    /// notices there, or bounds above them.
    package func lastChange(of scope: String, for userID: String) -> (row: Int64, notice: Int64) {
        (rows[scope] ?? rowFloor, notices[Notices(userID: userID, scope: scope)] ?? noticeFloor)
    }

    /// The last mutation id the store applied from `client`, if known.
    package func lastApplied(by client: Client) -> Int64? {
        clients[client]
    }

    /// Records a committed push. Called in the store's writer, after the
    /// commit and before any later write.
    package mutating func committed(_ commit: Commit) {
        version = max(version, commit.version)
        if let notice = commit.lastNotice { lastNotice = max(lastNotice, notice) }
        if rows.count + commit.rowScopes.count > capacity {
            rows = [:]
            rowFloor = version
        }
        for scope in commit.rowScopes { rows[scope] = max(rows[scope] ?? rowFloor, commit.version) }
        if notices.count + commit.notices.count > capacity { forgetNotices() }
        for key in commit.notices { notices[key] = max(notices[key] ?? noticeFloor, commit.lastNotice ?? lastNotice) }
        if clients[commit.client] == nil, clients.count >= capacity { forgetClients() }
        clients[commit.client] = max(clients[commit.client] ?? 0, commit.lastApplied)
    }

    /// Records a garbage collection's new horizon.
    package mutating func collected(horizon: Int64) {
        self.horizon = max(self.horizon, horizon)
    }

    /// Learns from a read of the file begun when ``generation`` was
    /// `generation`. A commit knows better, so a known client or notice
    /// walk keeps its figure; a read from before a table was emptied may
    /// predate a commit the table forgot, so it is dropped. A client's last
    /// applied id is learned only once the commits the read saw have been
    /// recorded here too, so an answer from memory never pairs it with
    /// pages older than it.
    package mutating func learn(_ read: Read, since generation: UInt64) {
        guard generation == self.generation else { return }
        if read.version <= version, clients[read.client] == nil {
            if clients.count >= capacity { return forgetClients() }
            clients[read.client] = read.lastApplied
        }
        for (key, bound) in read.notices where notices[key] == nil {
            if notices.count >= capacity { return forgetNotices() }
            notices[key] = bound
        }
    }

    private mutating func forgetNotices() {
        notices = [:]
        noticeFloor = lastNotice
        generation &+= 1
    }

    private mutating func forgetClients() {
        clients = [:]
        generation &+= 1
    }
}

extension LastChanges {
    /// ``LastChanges`` shared between the store's writer and its pulls.
    package final class Shared: Sendable {
        private let state: Mutex<LastChanges>

        package init(_ known: LastChanges) {
            state = Mutex(known)
        }

        package func withLock<T>(_ body: (inout LastChanges) -> T) -> T {
            state.withLock { body(&$0) }
        }
    }
}
