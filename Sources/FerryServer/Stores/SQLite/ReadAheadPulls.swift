import FerryProtocol
import Synchronization

/// Pulls the SQLite store read before a client asks for them.
///
/// After a pull whose pages have more to come, the store reads the pull a
/// Ferry client sends next (``PullReadAhead/nextRequest(after:of:)``) in the
/// background, while the page is on the wire and the client applies it, and
/// keeps the answer here under the client. When the client's next pull comes
/// it takes the answer, but only if:
/// - the read saw one unchanged file (the same even ``WriteSequence`` count
///   before and after it) and the store's writes still stand at that count,
///   so no write of this process changed the file since;
/// - the pull is the one read (``PullReadAhead/matches(_:predicted:noticeStart:epoch:)``),
///   at the same limit.
///
/// The answer is then the one a read at that moment would give, to the
/// byte. Any other pull is read as ever.
///
/// What it costs is bounded:
/// - A client whose pull was not the one read is not read ahead for the
///   next ``coolingPulls`` times it would be (the table of cooling clients
///   forgets them all past 1,024).
/// - At most ``maxRunning`` reads ahead run at once, so pulls keep the
///   store's other readers.
/// - At most ``maxEntries`` answers are held, each with at most
///   ``maxAnswerBytes`` in its rows' buffers (a bigger one is dropped when
///   read; its notices come on top, held to the pull's own page limits).
///   With the table full, the newest syncs go without rather than push out
///   answers their clients are about to take; only one held longer than
///   ``stale`` gives way.
///
/// ```swift
/// if let ahead = await readAhead.take(request, client: client, limit: limit, epoch: epoch, writes: writes) {
///     return ahead.answer
/// }
/// ```
package final class ReadAheadPulls: Sendable {
    /// What a read ahead found.
    package struct Read: Sendable {
        package var answer: EncodedPullResponse
        /// What it tells ``LastChanges``.
        package var read: LastChanges.Read
        /// ``LastChanges/generation`` when the read began.
        package var generation: UInt64
        /// Where notices start for the client when its pull sends no notice cursor.
        package var noticeStart: ChangePosition
        /// The write count the file stood at through the read.
        package var writes: UInt64

        package init(answer: EncodedPullResponse, read: LastChanges.Read, generation: UInt64, noticeStart: ChangePosition, writes: UInt64) {
            self.answer = answer
            self.read = read
            self.generation = generation
            self.noticeStart = noticeStart
            self.writes = writes
        }
    }

    /// Answers held at once.
    package static let maxEntries = 16
    /// Reads ahead running at once.
    package static let maxRunning = 2
    /// The most bytes an answer's rows may hold in their buffers to be held.
    package static let maxAnswerBytes = 4 << 20
    /// Times a client is not read ahead after a pull that was not the one read.
    package static let coolingPulls = 16
    /// How long a held answer keeps its place when the table is full.
    package static let stale = Duration.seconds(5)

    private struct Entry {
        var request: PullRequest
        var limit: Int
        var made: ContinuousClock.Instant
        var task: Task<Read?, Never>
    }

    private struct State {
        var entries: [LastChanges.Client: Entry] = [:]
        /// Clients in the order their entries were made, oldest first.
        var order: [LastChanges.Client] = []
        /// Every read ahead still running, held or not.
        var running: [UInt64: Task<Read?, Never>] = [:]
        var nextRead: UInt64 = 0
        var cooling: [LastChanges.Client: Int] = [:]
        var closed = false

        mutating func remove(_ client: LastChanges.Client) -> Entry? {
            guard let entry = entries.removeValue(forKey: client) else { return nil }
            order.removeAll { $0 == client }
            return entry
        }
    }

    private let state = Mutex(State())
    private let now: @Sendable () -> ContinuousClock.Instant

    /// - Parameter now: the clock ``stale`` is counted on.
    package init(now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.now = now
    }

    /// The clients an answer is held for.
    package var holding: Set<LastChanges.Client> { state.withLock { Set($0.entries.keys) } }

    /// Whether the store reads a pull ahead for `client`: not while it
    /// cools (it counts one down), nor while ``maxRunning`` reads run.
    package func admits(_ client: LastChanges.Client) -> Bool {
        state.withLock { state in
            guard !state.closed, state.running.count < Self.maxRunning else { return false }
            if let left = state.cooling[client] {
                state.cooling[client] = left > 1 ? left - 1 : nil
                return false
            }
            return true
        }
    }

    /// Runs `read`, the read of `request` ahead of its pull, and holds its
    /// answer for `client` in place of any held for it before. With
    /// ``maxEntries`` held, the oldest gives way if held longer than
    /// ``stale``; otherwise nothing is read.
    package func hold(_ request: PullRequest, for client: LastChanges.Client, limit: Int, read: @escaping @Sendable () async -> Read?) {
        let made = now()
        let dropped: [Task<Read?, Never>] = state.withLock { state in
            guard !state.closed else { return [] }
            var dropped: [Task<Read?, Never>] = []
            if let old = state.remove(client) { dropped.append(old.task) }
            while state.entries.count >= Self.maxEntries {
                guard let oldest = state.order.first, let entry = state.entries[oldest], made - entry.made > Self.stale else {
                    return dropped
                }
                _ = state.remove(oldest)
                dropped.append(entry.task)
            }
            let id = state.nextRead
            state.nextRead &+= 1
            let task = Task { [self] in
                let answer = await read()
                _ = self.state.withLock { $0.running.removeValue(forKey: id) }
                return answer
            }
            state.running[id] = task
            state.entries[client] = Entry(request: request, limit: limit, made: made, task: task)
            state.order.append(client)
            return dropped
        }
        for task in dropped { task.cancel() }
    }

    /// The answer read ahead for `request`, if `client` has one, it is the
    /// pull read, and the store's writes still stand where they stood
    /// through the read. Waits for a read still running (one read of the
    /// file, which takes no lock). The held answer is gone either way.
    package func take(
        _ request: PullRequest, client: LastChanges.Client, limit: Int, epoch: String, writes: WriteSequence
    ) async -> Read? {
        guard let entry = state.withLock({ $0.remove(client) }) else { return nil }
        guard entry.limit == limit else {
            cool(client)
            return nil
        }
        // A read that saw the file change, or failed, answers nothing: the pull reads as ever.
        guard let ahead = await entry.task.value else { return nil }
        guard PullReadAhead.matches(request, predicted: entry.request, noticeStart: ahead.noticeStart, epoch: epoch) else {
            cool(client)
            return nil
        }
        guard writes.stable == ahead.writes else { return nil }
        var taken = ahead
        taken.answer.wasReadAhead = true
        return taken
    }

    /// Drops the answer held for `client`, if any: its pull was answered otherwise.
    package func forget(_ client: LastChanges.Client) {
        let entry = state.withLock { $0.remove(client) }
        entry?.task.cancel()
    }

    /// Waits until every read ahead has ended (for tests: a write then comes after the reads).
    package func settled() async {
        for task in state.withLock({ Array($0.running.values) }) { _ = await task.value }
    }

    /// Drops every held answer and reads no more ahead; waits for the
    /// reads still running, held or not.
    package func close() async {
        let tasks = state.withLock { state in
            state.closed = true
            state.entries = [:]
            state.order = []
            return Array(state.running.values)
        }
        for task in tasks {
            task.cancel()
            _ = await task.value
        }
    }

    private func cool(_ client: LastChanges.Client) {
        state.withLock { state in
            if state.cooling.count >= 1024 { state.cooling = [:] }
            state.cooling[client] = Self.coolingPulls
        }
    }
}
