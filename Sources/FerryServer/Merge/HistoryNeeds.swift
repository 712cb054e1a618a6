import FerryProtocol

/// The part of each row's history a push can read, so a store loads that
/// and not every value the row ever held: a row edited ten thousand times
/// costs its next push what a row edited twice does.
///
/// A merge reads history in two ways only:
/// - ``StoredRow/value(of:at:)`` at a mutation's base, for a column whose
///   cell changed after the base: the newest value at or before the base;
/// - for a deleted row, any of it: the values a tombstone reports
///   (``StoredRow/serverRow``), and an update's base when it lost to the delete.
///
/// So for a row that is not deleted, each of its columns needs the newest
/// value at or before the oldest base among the push's mutations of the row,
/// and every later one; a deleted row needs all of it. A mutation without a
/// base counts as base 0.
///
/// ```swift
/// let needs = HistoryNeeds(request.mutations)
/// let oldest = needs.oldestBase(of: key)   // the bound a store's history query takes
/// ```
package struct HistoryNeeds: Sendable {
    private var oldest: [RowKey: Int64] = [:]

    package init(_ mutations: some Sequence<Mutation>) {
        for mutation in mutations {
            let key = RowKey(scope: mutation.scope, table: mutation.table, rowID: mutation.rowID)
            oldest[key] = min(oldest[key] ?? .max, mutation.baseVersion ?? 0)
        }
    }

    /// Given bounds, as the stores' tests ask for them.
    package init(oldestBases: [RowKey: Int64]) {
        oldest = oldestBases
    }

    /// The oldest base among the mutations of `key`; `Int64.max` for a row
    /// no mutation names (a read of the row: only its newest values count).
    package func oldestBase(of key: RowKey) -> Int64 {
        oldest[key] ?? .max
    }

    /// What a store keeps of `row`'s full history for a push whose oldest
    /// base for it is `oldestBase`: the rule the stores' queries follow,
    /// written out for tests.
    package static func trimmed(_ row: StoredRow, oldestBase: Int64) -> StoredRow {
        guard !row.deleted else { return row }
        var from: [String: Int64] = [:]
        for old in row.history where old.version <= oldestBase {
            from[old.column] = max(from[old.column] ?? .min, old.version)
        }
        var trimmed = row
        trimmed.history = row.history.filter { row.cells[$0.column] != nil && $0.version >= from[$0.column] ?? 0 }
        return trimmed
    }
}
