/// The pending rows counted for the status while a sync pushes, on a
/// reader connection beside the pushes, never waited for.
///
/// Counting reads every pending row (``Outbox/pendingCount()``): 100k of
/// them take about a tenth of a second. Counted between one batch and the
/// next, that was a tenth of a second in which the next batch did not go
/// out and the server sat idle. The push that finds a count due starts one;
/// a later push takes its answer once it is there.
///
/// ```swift
/// run.counting = PendingCountRead(database)
/// // … batches go out …
/// if let answer = run.counting?.answer { status.pendingCount = answer.count ?? status.pendingCount }
/// ```
struct PendingCountRead: Sendable {
    /// What the count came to (nil if it failed), and how long it took.
    typealias Answer = (count: Int?, took: Duration)

    private let slot = Locked<Answer?>(nil)
    private let task: Task<Void, Never>

    /// Starts counting `database`'s pending rows.
    init(_ database: FerryDatabase) {
        let slot = self.slot
        task = Task {
            let start = ContinuousClock.now
            let count = try? await database.read(Outbox.pendingCount)
            slot.withLock { $0 = (count, .now - start) }
        }
    }

    /// The answer, once the count is done; nil while it runs.
    var answer: Answer? { slot.value }

    /// Stops a count whose answer nobody will take.
    func cancel() { task.cancel() }
}
