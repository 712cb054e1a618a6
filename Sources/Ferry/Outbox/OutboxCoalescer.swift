/// Turns outbox entries, in write order, into the mutations to push.
///
/// A pure function of its input, so every rule is tested without a database:
/// - several edits of one row become one upsert with the union of their
///   changed columns, at the position of the row's first pending edit;
/// - a delete supersedes earlier edits;
/// - an edit made on a newer server version (after a pull) than the row's
///   pending edits starts a mutation of its own, keeping each one's base;
/// - a row inserted and deleted before it was ever pushed produces nothing
///   (its entries are returned as ``Result/discarded``);
/// - entries already handed to a push under a mutation id are frozen: they
///   are resent as they were and never merged with later edits, because the
///   server may already have applied them.
struct OutboxCoalescer {
    struct Result: Equatable {
        var mutations: [PendingMutation]
        /// Entries that cancel out and need never be pushed.
        var discarded: [Int64]
    }

    private enum GroupKey: Hashable {
        case open(table: String, rowID: String)
        case frozen(mutationID: Int64)
    }

    private struct Group {
        var mutation: PendingMutation
        /// The row was created by a pending insert the server has never seen.
        var createdLocally: Bool
    }

    static func coalesce(_ entries: [OutboxEntry]) -> Result {
        var groups: [Group?] = []
        var groupIndex: [GroupKey: Int] = [:]
        var discarded: [Int64] = []

        for entry in entries {
            let key: GroupKey =
                entry.mutationID.map { .frozen(mutationID: $0) }
                ?? .open(table: entry.table, rowID: entry.rowID)
            // An edit made on a newer server version than the open group's
            // starts a mutation of its own: sent with the older base, it would
            // conflict with changes the device had already seen.
            if case .open = key, let index = groupIndex[key], let group = groups[index],
                entry.operation != .delete, !group.createdLocally,
                (entry.baseVersion ?? 0) > (group.mutation.baseVersion ?? 0)
            {
                groupIndex[key] = nil
            }
            guard let index = groupIndex[key], var group = groups[index] else {
                groupIndex[key] = groups.count
                groups.append(
                    Group(
                        mutation: mutation(startingWith: entry),
                        createdLocally: entry.mutationID == nil && entry.operation == .insert && entry.baseVersion == nil))
                continue
            }
            if entry.operation == .delete && group.createdLocally {
                // Never pushed: the insert and everything after it cancel out.
                discarded += group.mutation.entrySeqs + [entry.seq]
                groups[index] = nil
                groupIndex[key] = nil
                continue
            }
            merge(entry, into: &group.mutation)
            groups[index] = group
        }
        return Result(mutations: groups.compactMap { $0?.mutation }, discarded: discarded)
    }

    private static func merge(_ entry: OutboxEntry, into mutation: inout PendingMutation) {
        mutation.entrySeqs.append(entry.seq)
        mutation.hlc = max(mutation.hlc, entry.hlc)
        mutation.scope = entry.scope
        switch entry.operation {
        case .delete:
            mutation.operation = .delete
            mutation.columns = nil
        case .insert:
            // Re-created after a delete, or replaced: every column is new.
            mutation.operation = .upsert
            mutation.columns = nil
        case .update:
            if mutation.operation == .delete {
                mutation.operation = .upsert
                mutation.columns = nil
            } else if let columns = mutation.columns, let changed = entry.columns {
                mutation.columns = columns.union(changed)
            } else {
                mutation.columns = nil
            }
        }
    }

    private static func mutation(startingWith entry: OutboxEntry) -> PendingMutation {
        PendingMutation(
            mutationID: entry.mutationID,
            entrySeqs: [entry.seq],
            table: entry.table,
            rowID: entry.rowID,
            operation: entry.operation == .delete ? .delete : .upsert,
            columns: entry.operation == .update ? entry.columns : nil,
            scope: entry.scope,
            baseVersion: entry.baseVersion,
            hlc: entry.hlc)
    }
}
