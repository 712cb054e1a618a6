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
    }

    private let lock = NSLock()
    private var outcomes: [Entry] = []
    private var collected: Int64 = 0

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
                outcomes.append(Entry(user: userID, clientID: request.clientID, mutation: mutation, result: result,
                                      before: before[mutation.rowID]))
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
        for entry in all where !entry.result.replayed {
            let key = "\(entry.clientID) #\(entry.mutation.mutationID)"
            if let index = firsts[key] {
                problems.append("\(key) applied twice: \(entries[index].result) and \(entry.result)")
            } else {
                firsts[key] = entries.count
                entries.append(entry)
            }
        }
        for entry in all where entry.result.replayed {
            let key = "\(entry.clientID) #\(entry.mutation.mutationID)"
            guard let index = firsts[key] else {
                problems.append("\(key) replayed but never applied")
                continue
            }
            let first = entries[index].result
            if first.status != entry.result.status || first.version != entry.result.version || first.conflicts != entry.result.conflicts {
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

    func createScope(_ scope: String, owner: String?) async throws { try await inner.createScope(scope, owner: owner) }

    func setMember(_ userID: String, role: ScopeRole, in scope: String) async throws {
        try await inner.setMember(userID, role: role, in: scope)
    }

    func collectGarbage(before cutoff: Date) async throws -> GarbageReport { try await inner.collectGarbage(before: cutoff) }

    func blobReferences() async throws -> Set<BlobKey> { try await inner.blobReferences() }

    func run() async throws { try await inner.run() }

    func close() async throws { try await inner.close() }
}
