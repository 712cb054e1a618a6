import FerryProtocol

extension PushPlan {
    /// The store's answer to the push this plan came from: the recorded
    /// results of the mutations it had applied before (replayed), then the
    /// results of the ones applied now. Every store reads the recorded
    /// results in its own SQL and answers through here.
    ///
    /// A replayed id whose recorded result garbage collection removed is
    /// answered as plainly applied: it was, and the client only needs to
    /// know it may drop the mutation.
    ///
    /// ```swift
    /// let recorded = …   // mutation id → stored result JSON, for plan.replayedIDs
    /// let runs = …       // the AppliedRun records that hold any of them
    /// return try plan.receipt(recorded: recorded, runs: runs)
    /// ```
    package func receipt(recorded: [Int64: String], runs: [AppliedRun]) throws -> PushReceipt {
        let replayed = try replayedIDs.map { id in
            var result =
                try recorded[id].map { try StoreCoding.decode(MutationResult.self, from: $0) }
                ?? runs.lazy.compactMap { $0.result(for: id) }.first
                ?? MutationResult(mutationID: id, status: .applied)
            result.replayed = true
            return result
        }
        return PushReceipt(
            response: PushResponse(lastAppliedMutationID: lastAppliedMutationID, results: replayed + results),
            changedScopes: changedScopes
        )
    }
}
