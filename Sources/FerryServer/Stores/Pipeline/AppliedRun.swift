import FerryProtocol

/// A run of a push's results that applied as written, kept as one record
/// instead of one per mutation: consecutive mutation ids, each of which
/// changed its row to the version after the one before. A push of new
/// rows is one run, so a store records a 500-mutation push in one row.
///
/// A replay reads a run back as the very results the push answered
/// (``result(for:)``). Every other result (merged, a conflict, a rejection,
/// an unchanged row) is recorded one by one, as before.
///
/// ```swift
/// let (runs, others) = AppliedRun.split(plan.results)
/// // store `runs` as (first, last, firstVersion) and each of `others` as JSON
/// let replayed = runs.lazy.compactMap { $0.result(for: 7) }.first
/// ```
package struct AppliedRun: Sendable, Hashable {
    package var firstMutationID: Int64
    package var lastMutationID: Int64
    /// The version `firstMutationID` gave its row; each next id gave the next.
    package var firstVersion: Int64

    package init(firstMutationID: Int64, lastMutationID: Int64, firstVersion: Int64) {
        self.firstMutationID = firstMutationID
        self.lastMutationID = lastMutationID
        self.firstVersion = firstVersion
    }

    /// The result the push answered for `id`, when the run holds it.
    package func result(for id: Int64) -> MutationResult? {
        guard firstMutationID <= id, id <= lastMutationID else { return nil }
        return MutationResult(mutationID: id, status: .applied, version: firstVersion + (id - firstMutationID))
    }

    /// Whether `result` is what a run can give back exactly: applied, with
    /// a version, and nothing else to say.
    static func fits(_ result: MutationResult) -> Bool {
        result.status == .applied && result.version != nil && result.conflicts.isEmpty && result.reason == nil
            && result.row == nil && !result.replayed
    }

    /// `results` as runs and the results no run can hold, each in order.
    /// Expanding the runs and merging the others back by id gives `results`.
    package static func split(_ results: [MutationResult]) -> (runs: [AppliedRun], others: [MutationResult]) {
        var runs: [AppliedRun] = []
        var others: [MutationResult] = []
        for result in results {
            guard fits(result), let version = result.version else {
                others.append(result)
                continue
            }
            if let last = runs.last, last.lastMutationID + 1 == result.mutationID,
                last.firstVersion + (result.mutationID - last.firstMutationID) == version
            {
                runs[runs.count - 1].lastMutationID = result.mutationID
            } else {
                runs.append(AppliedRun(firstMutationID: result.mutationID, lastMutationID: result.mutationID, firstVersion: version))
            }
        }
        return (runs, others)
    }
}
