import FerryProtocol
@testable import FerryServer
import Foundation

/// The simulation's own record of what the servers did with every push, as
/// each store reported it: kept by the test, across server restarts and
/// instances, and never collected, so the checks at quiescence can hold the
/// final state against every mutation ever acknowledged.
final class Ledger: @unchecked Sendable {
    // @unchecked: every field is only touched under `lock`.

    /// One outcome of a mutation, with the row as the server held it just
    /// before the push.
    struct Entry {
        var user: String
        var clientID: String
        var mutation: Mutation
        var result: MutationResult
        var before: ServerRow?
        /// The store's era: 0, and 1 once the store was restored from a
        /// snapshot (its versions then start over from the snapshot's).
        var era = 0
    }

    /// A store restored from a snapshot: what it lost, and where it went on.
    struct Restore {
        /// The store's version when the snapshot was taken: era-0 changes
        /// past it were lost with the restore.
        var snapshotVersion: Int64
    }

    private let lock = NSLock()
    private var outcomes: [Entry] = []
    private var collected: Int64 = 0
    private var era = 0
    private var restored: Restore?

    /// Where the store stood when it was restored (once at most), if it was.
    var restore: Restore? { lock.withLock { restored } }

    /// The store was put back to a snapshot taken at `version`, when
    /// `collectedThrough` was `collected`: outcomes from now on are of era 1.
    func storeRestored(snapshotVersion version: Int64, collectedThrough collected: Int64) {
        lock.withLock {
            era += 1
            restored = Restore(snapshotVersion: version)
            self.collected = collected
        }
    }

    /// Whether an entry's change was lost when the store was restored.
    func lost(_ entry: Entry) -> Bool {
        guard let restore else { return false }
        return entry.era == 0 && (entry.result.version ?? 0) > restore.snapshotVersion
    }

    /// The server version at the last tombstone collection: conflict
    /// notices from before it may have been collected with the tombstones.
    var collectedThrough: Int64 {
        get { lock.withLock { collected } }
        set { lock.withLock { collected = newValue } }
    }

    func record(_ request: PushRequest, userID: String, response: PushResponse, before: [String: ServerRow]) {
        let mutations = Dictionary(request.mutations.map { ($0.mutationID, $0) }, uniquingKeysWith: { a, _ in a })
        lock.withLock {
            for result in response.results {
                guard let mutation = mutations[result.mutationID] else { continue }
                outcomes.append(
                    Entry(
                        user: userID, clientID: request.clientID, mutation: mutation, result: result,
                        before: before[mutation.rowID], era: era))
            }
        }
    }

    /// Every mutation's first outcome (its replays are checked, not kept),
    /// in the order the stores applied them; and what a store did that it
    /// must never do: apply an id twice, answer for a mutation the push did
    /// not carry, or replay a result other than the one it recorded.
    /// (Duplicated requests run at once, so a replay may be told before
    /// the first outcome.)
    func firstOutcomes() -> (entries: [Entry], problems: [String]) {
        let all = lock.withLock { outcomes }
        var firsts: [String: Int] = [:]
        var entries: [Entry] = []
        var problems: [String] = []
        // A restored store forgot the ids it applied after the snapshot: they
        // are applied afresh in the next era.
        for entry in all where !entry.result.replayed {
            let key = "\(entry.era) \(entry.clientID) #\(entry.mutation.mutationID)"
            if let index = firsts[key] {
                problems.append("\(key) applied twice: \(entries[index].result) and \(entry.result)")
            } else {
                firsts[key] = entries.count
                entries.append(entry)
            }
        }
        for entry in all where entry.result.replayed {
            let key = "\(entry.era) \(entry.clientID) #\(entry.mutation.mutationID)"
            // A replay in era 1 of an id applied in era 0 before the snapshot.
            guard let index = firsts[key] ?? firsts["0 \(entry.clientID) #\(entry.mutation.mutationID)"] else {
                problems.append("\(key) replayed but never applied")
                continue
            }
            let first = entries[index].result
            // A result older than the tombstone horizon may have been collected: its
            // replay is then answered as plainly applied (GarbageRules rule 4).
            let collectedAnswer =
                entry.result.status == .applied && entry.result.version == nil
                && entry.result.conflicts.isEmpty && (first.version ?? 0) <= lock.withLock({ collected })
            if !collectedAnswer,
                first.status != entry.result.status || first.version != entry.result.version || first.conflicts != entry.result.conflicts
            {
                problems.append("\(key) replayed as \(entry.result) but first was \(first)")
            }
        }
        return (entries, problems)
    }
}

/// A store that tells the ledger of every push it answers, and otherwise
/// passes each call through.
struct LedgerStore: SyncStore {
    let inner: any SyncStore
    let ledger: Ledger

    var changeFeed: ChangeFeed { inner.changeFeed }

    func push(_ request: PushRequest, userID: String, rules: PushRules) async throws -> PushReceipt {
        var before: [String: ServerRow] = [:]
        for mutation in request.mutations {
            before[mutation.rowID] = try await inner.row(scope: mutation.scope, table: mutation.table, rowID: mutation.rowID)
        }
        let receipt = try await inner.push(request, userID: userID, rules: rules)
        ledger.record(request, userID: userID, response: receipt.response, before: before)
        return receipt
    }

    func pullEncoded(_ request: PullRequest, userID: String, limit: Int, notices: Bool) async throws -> EncodedPullResponse {
        try await inner.pullEncoded(request, userID: userID, limit: limit, notices: notices)
    }

    func pullEncoded(_ request: PullRequest, userID: String, limit: Int) async throws -> EncodedPullResponse {
        try await inner.pullEncoded(request, userID: userID, limit: limit)
    }

    func endCursors(scopes: [String]) async throws -> [String: String] { try await inner.endCursors(scopes: scopes) }

    func row(scope: String, table: String, rowID: String) async throws -> ServerRow? {
        try await inner.row(scope: scope, table: table, rowID: rowID)
    }

    func makeBlobStore(maxBlobBytes: Int64) throws -> any BlobStore { try inner.makeBlobStore(maxBlobBytes: maxBlobBytes) }

    func lastAppliedMutationID(userID: String, clientID: String) async throws -> Int64 {
        try await inner.lastAppliedMutationID(userID: userID, clientID: clientID)
    }

    func membership(of userID: String, in scope: String) async throws -> ScopeMembership? {
        try await inner.membership(of: userID, in: scope)
    }

    func memberships(of userID: String) async throws -> [ScopeMembership] { try await inner.memberships(of: userID) }

    func readers(of scope: String) async throws -> ScopeReaders? { try await inner.readers(of: scope) }

    func createScope(_ scope: String, owner: String?) async throws { try await inner.createScope(scope, owner: owner) }

    func setMember(_ userID: String, role: ScopeRole, in scope: String) async throws {
        try await inner.setMember(userID, role: role, in: scope)
    }

    func collectGarbage(before cutoff: Date) async throws -> GarbageReport { try await inner.collectGarbage(before: cutoff) }

    func blobReferences() async throws -> Set<BlobKey> { try await inner.blobReferences() }

    func run() async throws { try await inner.run() }

    func close() async throws { try await inner.close() }

    // The admin API's reads and webhook state, passed through.

    func scopes(after: String?, limit: Int) async throws -> [ScopeSummary] { try await inner.scopes(after: after, limit: limit) }

    func scope(_ scope: String) async throws -> ScopeSummary? { try await inner.scope(scope) }

    func removeMember(_ userID: String, from scope: String) async throws -> Bool { try await inner.removeMember(userID, from: scope) }

    func rows(scope: String, table: String, after: String?, changedSince: Int64?, limit: Int) async throws -> [ListedRow] {
        try await inner.rows(scope: scope, table: table, after: after, changedSince: changedSince, limit: limit)
    }

    func changes(after cursor: String?, scope: String?, table: String?, limit: Int) async throws -> ChangeFeedPage {
        try await inner.changes(after: cursor, scope: scope, table: table, limit: limit)
    }

    func users(after: String?, limit: Int) async throws -> [String] { try await inner.users(after: after, limit: limit) }

    func devices(of userID: String) async throws -> [DeviceSummary] { try await inner.devices(of: userID) }

    func inspectRow(scope: String, table: String, rowID: String) async throws -> RowInspection {
        try await inner.inspectRow(scope: scope, table: table, rowID: rowID)
    }

    func recentConflicts(_ filter: ConflictFilter, limit: Int) async throws -> [InspectedConflict] {
        try await inner.recentConflicts(filter, limit: limit)
    }

    func recentNotices(_ filter: ConflictFilter, limit: Int) async throws -> [InspectedNotice] {
        try await inner.recentNotices(filter, limit: limit)
    }

    func overview() async throws -> StoreOverview { try await inner.overview() }

    func scopeContents(_ scope: String) async throws -> ScopeContents { try await inner.scopeContents(scope) }

    func userActivity(_ userID: String) async throws -> UserActivity { try await inner.userActivity(userID) }

    func leaseWebhook(_ name: String, holder: String, now: Int64, leaseMilliseconds: Int64) async throws -> WebhookState? {
        try await inner.leaseWebhook(name, holder: holder, now: now, leaseMilliseconds: leaseMilliseconds)
    }

    func recordWebhook(_ state: WebhookState, holder: String, now: Int64) async throws -> Bool {
        try await inner.recordWebhook(state, holder: holder, now: now)
    }

    func webhookStates() async throws -> [WebhookState] { try await inner.webhookStates() }

    func replayWebhook(_ name: String, from start: WebhookReplay) async throws -> Bool { try await inner.replayWebhook(name, from: start) }
}
