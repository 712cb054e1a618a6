/// What the background loop decides, apart from its I/O (like
/// ``SyncStateMachine``): how long a trigger waits before it syncs, and when
/// a failed source of triggers — the observation of local writes, the timer,
/// the live stream — runs again. A failed source restarts with backoff and
/// jitter; the others keep running; a source that runs again starts its
/// backoff over.
///
/// ```swift
/// var decisions = BackgroundDecisions(debounce: .milliseconds(200), retry: RetryPolicy())
/// decisions.wait(before: .localChange)                          // 200 ms: more writes may follow
/// let delay = decisions.failed(.observation, unit: 0.5)         // the first backoff, half jittered
/// decisions.ran(.observation)                                   // the next failure starts over
/// ```
struct BackgroundDecisions: Sendable {
    /// Where triggers come from.
    enum Source: String, Sendable, Hashable, CaseIterable {
        /// The observation of local writes (the pending count).
        case observation
        /// The periodic timer.
        case timer
        /// The server's live stream.
        case live
    }

    let debounce: Duration
    let retry: RetryPolicy
    private var failures: [Source: Int] = [:]

    init(debounce: Duration, retry: RetryPolicy) {
        self.debounce = debounce
        self.retry = retry
    }

    /// How long a trigger waits before its sync: a local write waits for
    /// more (the debounce); news and ticks sync now.
    func wait(before trigger: SyncEngine.Trigger) -> Duration {
        trigger == .localChange ? debounce : .zero
    }

    /// A source failed (or ended): how long until it runs again. `unit` is
    /// the jitter, drawn from the engine's random source; a server's
    /// `Retry-After` (a rate limit on opening the live stream) is a floor.
    mutating func failed(_ source: Source, unit: Double, retryAfter: Duration? = nil) -> Duration {
        let attempt = failures[source, default: 0]
        failures[source] = attempt + 1
        return retry.delay(attempt: attempt, retryAfter: retryAfter, unit: unit)
    }

    /// A source ran as it should (the observation yielded, the live stream
    /// is ready): its next failure backs off from the start.
    mutating func ran(_ source: Source) {
        failures[source] = nil
    }

    /// How many times in a row the source has failed.
    func failureCount(_ source: Source) -> Int {
        failures[source, default: 0]
    }
}
