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
///   so the file is the one the read saw;
/// - the pull is the one read (``PullReadAhead/matches(_:predicted:noticeStart:epoch:)``),
///   at the same limit.
///
/// The answer is then the one a read at that moment would give, to the
/// byte. Any other pull is read as ever; a client whose pull was not the one
/// read gets no read ahead for its next ``coolingPulls`` pulls, so a client
/// that asks otherwise than a Ferry client costs the store few wasted reads.
/// At most ``maxEntries`` answers, about ``maxBytes`` in all, are held: with
/// more syncs under way, the newest go without rather than push out answers
/// their clients are about to take.
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
    /// About the most bytes of answers held at once (each counted as the page it follows).
    package static let maxBytes = 64 << 20
    /// Pulls a client gets no read ahead for after one that was not the pull read.
    package static let coolingPulls = 16
    /// How long a held answer keeps its place when the table is full.
    package static let stale = Duration.seconds(5)

    private struct Entry {
        var request: PullRequest
        var limit: Int
        var bytes: Int
        var made: ContinuousClock.Instant
        var task: Task<Read?, Never>
    }

    private struct State {
        var entries: [LastChanges.Client: Entry] = [:]
        /// Clients in the order their entries were made, oldest first.
        var order: [LastChanges.Client] = []
        var cooling: [LastChanges.Client: Int] = [:]
        var bytes = 0
        var closed = false
        var hits = 0

        mutating func remove(_ client: LastChanges.Client) -> Entry? {
            guard let entry = entries.removeValue(forKey: client) else { return nil }
            order.removeAll { $0 == client }
            bytes -= entry.bytes
            return entry
        }
    }

    private let state = Mutex(State())

    package init() {}

    /// How many pulls were answered from a read ahead.
    package var hits: Int { state.withLock { $0.hits } }

    /// Whether the store reads a pull ahead for `client`, about `bytes` big;
    /// a client cooling after a pull it did not send counts one pull down.
    package func admits(_ client: LastChanges.Client, bytes: Int) -> Bool {
        state.withLock { state in
            guard !state.closed, bytes <= Self.maxBytes else { return false }
            if let left = state.cooling[client] {
                state.cooling[client] = left > 1 ? left - 1 : nil
                return false
            }
            return true
        }
    }

    /// Holds `read`, the read of `request` ahead of its pull, for `client`,
    /// in place of any answer held for it before. To keep within
    /// ``maxEntries`` and ``maxBytes``, answers held longer than ``stale``
    /// give way, oldest first; if that is not enough, nothing is read.
    package func hold(
        _ request: PullRequest, for client: LastChanges.Client, limit: Int, bytes: Int,
        read: @escaping @Sendable () async -> Read?
    ) {
        let dropped: [Task<Read?, Never>] = state.withLock { state in
            guard !state.closed else { return [] }
            var dropped: [Task<Read?, Never>] = []
            if let old = state.remove(client) { dropped.append(old.task) }
            // Full: answers not taken for a while give way; fresher ones are
            // the next pulls of syncs under way, so none is read ahead now.
            let now = ContinuousClock.now
            while state.entries.count >= Self.maxEntries || state.bytes + bytes > Self.maxBytes {
                guard let oldest = state.order.first, let entry = state.entries[oldest], now - entry.made > Self.stale else {
                    return dropped
                }
                _ = state.remove(oldest)
                dropped.append(entry.task)
            }
            state.entries[client] = Entry(request: request, limit: limit, bytes: bytes, made: now, task: Task(operation: read))
            state.order.append(client)
            state.bytes += bytes
            return dropped
        }
        for task in dropped { task.cancel() }
    }

    /// The answer read ahead for `request`, if `client` has one, it is the
    /// pull read, and the store's writes still stand where they stood
    /// through the read. Waits for a read still running. The held answer is
    /// gone either way.
    package func take(
        _ request: PullRequest, client: LastChanges.Client, limit: Int, epoch: String, writes: WriteSequence
    ) async -> Read? {
        guard let entry = state.withLock({ $0.remove(client) }) else { return nil }
        guard entry.limit == limit, entry.request.clientID == request.clientID else {
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
        state.withLock { $0.hits += 1 }
        return ahead
    }

    /// Waits until every held read has ended (for tests: a write then comes after the read).
    package func settled() async {
        for task in state.withLock({ $0.entries.values.map(\.task) }) { _ = await task.value }
    }

    /// Drops every held answer and holds no more; waits for reads still running.
    package func close() async {
        let tasks = state.withLock { state in
            state.closed = true
            let tasks = state.entries.values.map(\.task)
            state.entries = [:]
            state.order = []
            state.bytes = 0
            return tasks
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
