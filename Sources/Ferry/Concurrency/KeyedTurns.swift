/// Runs work one at a time per key, in the order it asked: two downloads
/// of one attachment take turns instead of writing one file together.
///
/// ```swift
/// let turns = KeyedTurns()
/// try await turns.run(attachmentID) { try await fetch() }
/// ```
final class KeyedTurns: Sendable {
    /// Per key held: the turns waiting for it, first first.
    private let waiting = Locked<[String: [CheckedContinuation<Void, Never>]]>([:])

    func run<T>(_ key: String, _ body: () async throws -> T) async rethrows -> T {
        await withCheckedContinuation { (turn: CheckedContinuation<Void, Never>) in
            let free = waiting.withLock { waiting in
                guard waiting[key] != nil else {
                    waiting[key] = []
                    return true
                }
                waiting[key]?.append(turn)
                return false
            }
            if free { turn.resume() }
        }
        defer {
            let next = waiting.withLock { waiting -> CheckedContinuation<Void, Never>? in
                guard var queue = waiting[key], !queue.isEmpty else {
                    waiting[key] = nil
                    return nil
                }
                let next = queue.removeFirst()
                waiting[key] = queue
                return next
            }
            next?.resume()
        }
        return try await body()
    }
}
