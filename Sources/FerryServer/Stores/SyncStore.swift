import FerryProtocol
import Foundation
import ServiceLifecycle
import Tracing

/// The rules a store applies to a push, beyond its data.
public struct PushRules: Sendable {
    public var tables: ServerTables
    /// How far ahead of server time a last-write-wins stamp may be.
    public var maxClockDrift: Duration
    /// Server wall time now.
    public var now: Date
    /// Whether a mutation at or below the client's last applied id must be
    /// the one applied under its id (``MutationDigest``) to be a replay.
    /// Off for a backend's writes, which a resend stamps anew.
    package var comparesReplays = true
    /// The trace the push belongs to, for the merge's span: a store plans
    /// inside its database's own threads, where the task's context is not.
    package var serviceContext: ServiceContext?

    public init(tables: ServerTables = ServerTables(), maxClockDrift: Duration = .seconds(60), now: Date = Date()) {
        self.tables = tables
        self.maxClockDrift = maxClockDrift
        self.now = now
    }

    package var planner: PushPlanner {
        PushPlanner(tables: tables, maxClockDriftMilliseconds: maxClockDrift.wholeMilliseconds)
    }

    /// Plans a push under these rules (see ``PushPlanner``), turning a gap
    /// into the `mutationGap` error a store answers with, and a replay that
    /// differs from what was applied (`recorded`) into `clientIDReused`.
    package func plan(
        _ request: PushRequest, userID: String, lastApplied: Int64, rows: [RowKey: StoredRow],
        version: Int64, allocated: [Int64]? = nil, horizon: Int64, recorded: [Int64: MutationDigest] = [:]
    ) throws(FerryServerError) -> PushPlan {
        let span = startSpan("ferry.merge", context: serviceContext ?? .topLevel)
        span.attributes["ferry.mutations"] = request.mutations.count
        defer { span.end() }
        do {
            return try planner.plan(
                userID: userID, clientID: request.clientID, mutations: request.mutations, lastApplied: lastApplied,
                rows: rows, version: version, allocated: allocated, horizon: horizon,
                recorded: comparesReplays ? recorded : [:], nowMilliseconds: nowMilliseconds
            )
        } catch {
            switch error {
            case .gap(let last, let found):
                throw FerryServerError(
                    .mutationGap,
                    "mutation \(found) does not follow the last applied mutation \(last); resend from \(last + 1)",
                    lastAppliedMutationID: last
                )
            case .differentReplay(let last, let id):
                throw FerryServerError(
                    .clientIDReused,
                    "mutation \(id) is not the mutation applied under that id for this client: another copy of this database pushed under the same client id; take a new client id and send the mutations from \(id) under it",
                    lastAppliedMutationID: last, differingMutationID: id
                )
            }
        }
    }

    package var nowMilliseconds: Int64 {
        Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
    }
}

/// What a push did, for the reply and for metrics.
public struct PushReceipt: Sendable, Hashable {
    public var response: PushResponse
    /// Scopes whose rows changed.
    public var changedScopes: Set<String>

    public init(response: PushResponse, changedScopes: Set<String>) {
        self.response = response
        self.changedScopes = changedScopes
    }
}

/// What a garbage collection removed.
public struct GarbageReport: Sendable, Hashable {
    /// The tombstone horizon now: cursors older than it get a reset.
    public var horizon: Int64
    public var tombstonesRemoved: Int

    public init(horizon: Int64, tombstonesRemoved: Int) {
        self.horizon = horizon
        self.tombstonesRemoved = tombstonesRemoved
    }
}

/// Where the server keeps rows, versions, client state and scopes: the seam
/// between the HTTP API and a database.
///
/// Every store keeps the server semantics: a push and the client's
/// last applied mutation id advance in one transaction; a pull page and the
/// last applied id are read from one snapshot; versions never let a pull
/// skip a committed change. ``SQLiteSyncStore`` runs on one machine;
/// `PostgresSyncStore` (in `FerryPostgres`) serves many
/// instances.
///
/// Callers check access and the shape of requests first (the HTTP layer
/// does); a store trusts that `userID` may write every scope of a push and
/// read every scope of a pull.
///
/// ```swift
/// let store = try SQLiteSyncStore(directory: dataDirectory)
/// let receipt = try await store.push(request, userID: "alice", rules: PushRules())
/// let page = try await store.pull(PullRequest(clientID: id, scopes: [.init(scope: "user:alice")]), userID: "alice", limit: 500)
/// ```
public protocol SyncStore: StoreAdministration, StoreInspection {
    /// Live news of committed changes.
    var changeFeed: ChangeFeed { get }

    /// Applies a push: idempotent, all or nothing.
    ///
    /// - Throws: ``FerryServerError`` `mutationGap` when a fresh id skips
    ///   ahead, with the last applied id; nothing is written.
    func push(_ request: PushRequest, userID: String, rules: PushRules) async throws -> PushReceipt

    /// Reads one page per scope, and the client's last applied id, from one
    /// snapshot, each row's values kept as the JSON a page sends.
    ///
    /// - Throws: ``FerryServerError`` `badRequest` for a garbled or forged cursor.
    func pullEncoded(_ request: PullRequest, userID: String, limit: Int) async throws -> EncodedPullResponse

    /// ``pullEncoded(_:userID:limit:)`` without conflict notices (`notices:
    /// false`): the live stream sends rows, and notices go with pulls.
    func pullEncoded(_ request: PullRequest, userID: String, limit: Int, notices: Bool) async throws -> EncodedPullResponse

    /// A cursor per scope at the end of what a pull can read now: where a
    /// live stream's pages start.
    func endCursors(scopes: [String]) async throws -> [String: String]

    /// One row as the server holds it now (a tombstone with the values it
    /// last held), or `nil` when the store has no such row.
    func row(scope: String, table: String, rowID: String) async throws -> ServerRow?

    /// The store's own place for attachment bytes: files beside an SQLite
    /// store, chunks in the PostgreSQL store's database.
    func makeBlobStore(maxBlobBytes: Int64) throws -> any BlobStore

    /// The last mutation id the store applied for a client (0: none).
    func lastAppliedMutationID(userID: String, clientID: String) async throws -> Int64

    /// The stored membership of `userID` in a shared scope, if any.
    func membership(of userID: String, in scope: String) async throws -> ScopeMembership?

    /// The owner and every member of a shared scope, read in one snapshot;
    /// `nil` when the scope does not exist. A store that cannot list them
    /// answers `nil` for every scope (the default), and each live stream
    /// then asks ``membership(of:in:)`` for itself.
    func readers(of scope: String) async throws -> ScopeReaders?

    /// Every shared scope `userID` owns or belongs to.
    func memberships(of userID: String) async throws -> [ScopeMembership]

    /// Creates a shared scope. `owner` may add members; `nil` leaves it to administrators.
    ///
    /// - Throws: ``FerryServerError`` `alreadyExists`.
    func createScope(_ scope: String, owner: String?) async throws

    /// Adds `userID` to a shared scope, or changes their role.
    func setMember(_ userID: String, role: ScopeRole, in scope: String) async throws

    /// Removes tombstones and conflict notices from before `cutoff`, and
    /// moves the horizon past the tombstones.
    func collectGarbage(before cutoff: Date) async throws -> GarbageReport

    /// The blobs attachment rows refer to: a live row's `sha256`, or a
    /// deleted row's until its tombstone is collected (see `BlobGarbageRules`).
    func blobReferences() async throws -> Set<BlobKey>

    /// Runs what the store needs in the background (connections, listeners)
    /// until a graceful shutdown or ``close()``, then closes it. The
    /// application runs it as a service, after the HTTP server has drained.
    func run() async throws

    /// Closes the store; later calls fail.
    func close() async throws
}

extension SyncStore {
    public func readers(of scope: String) async throws -> ScopeReaders? { nil }

    public func pullEncoded(_ request: PullRequest, userID: String, limit: Int) async throws -> EncodedPullResponse {
        try await pullEncoded(request, userID: userID, limit: limit, notices: true)
    }

    /// ``pullEncoded(_:userID:limit:)`` with every row's values decoded.
    public func pull(_ request: PullRequest, userID: String, limit: Int) async throws -> PullResponse {
        try await pullEncoded(request, userID: userID, limit: limit).decoded()
    }

    /// A store with nothing to run waits for the shutdown, then closes.
    public func run() async throws {
        try? await gracefulShutdown()
        try await close()
    }
}
