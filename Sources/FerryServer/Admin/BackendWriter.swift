import FerryProtocol

/// How a backend write becomes a push: who writes it, under which client,
/// and the mutations the store merges. Pure, so the rules are tested
/// without a store.
///
/// A request id is its own client of the writer (the store names it
/// `server:<writer>:<request id>`), its writes mutations 1…n: a request sent again is a push the store has
/// applied, so it is acknowledged with the first results and changes
/// nothing (server semantic 1), on either store, in the same transaction.
///
/// ```swift
/// let writer = BackendWriter(request)
/// let push = writer.push(bases: [key: 7], now: nowMilliseconds)   // user "server:moderation"
/// ```
struct BackendWriter: Sendable {
    let request: BackendWriteRequest

    init(_ request: BackendWriteRequest) {
        self.request = request
    }

    /// The prefix of every server writer's user id; no user id a token can carry has a `:`.
    static let userPrefix = "server:"

    /// The user the writes are attributed to, and that notices name.
    var userID: String { Self.userPrefix + request.writer }

    /// The request's own client.
    var clientID: String { request.requestID }

    /// The rows whose current version stands in for a missing base.
    var rowsWithoutBase: [RowKey] {
        request.writes.filter { $0.baseVersion == nil }.map(\.key)
    }

    /// The push: one mutation per write, in order, stamped with the server's
    /// clock. A write without a base version is based on the row's current
    /// version from `bases` (absent: a new row), so it writes over the row
    /// as it is and conflicts only with a change that commits in between.
    func push(bases: [RowKey: Int64], now: Int64) -> PushRequest {
        let stamp = HLCTimestamp(wallMilliseconds: now, counter: 0)
        let mutations = request.writes.enumerated().map { index, write in
            Mutation(
                mutationID: Int64(index + 1), table: write.table, rowID: write.rowID, scope: write.scope, operation: write.operation,
                columns: write.operation == .delete ? [:] : write.columns ?? [:], baseVersion: write.baseVersion ?? bases[write.key],
                hlc: stamp)
        }
        return PushRequest(clientID: clientID, mutations: mutations)
    }
}

extension BackendWrite {
    var key: RowKey { RowKey(scope: scope, table: table, rowID: rowID) }
}
