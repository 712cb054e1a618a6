/// How long a connection waits, attempt by attempt, when another process
/// holds the write lock — SQLite's own busy-timeout schedule, reimplemented
/// so Ferry can count the waits it would otherwise hide.
///
/// ```swift
/// let schedule = BusyWaitSchedule(timeoutMilliseconds: 5_000)
/// schedule.delay(attempt: 0)      // 1 ms
/// schedule.delay(attempt: 500)    // nil: give up, SQLITE_BUSY
/// ```
public struct BusyWaitSchedule: Sendable, Hashable {
    /// The total wait after which the caller gets `SQLITE_BUSY`.
    public var timeoutMilliseconds: Int

    // sqlite3.c, sqliteDefaultBusyCallback
    private static let delays = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100]
    private static let totals = [0, 1, 3, 8, 18, 33, 53, 78, 103, 128, 178, 228]

    public init(timeoutMilliseconds: Int) {
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// The time waited before attempt `attempt` (0-based).
    public func waited(beforeAttempt attempt: Int) -> Int {
        if attempt < Self.delays.count { return Self.totals[attempt] }
        return Self.totals.last! + Self.delays.last! + 100 * (attempt - Self.delays.count)
    }

    /// How long to sleep before retrying attempt `attempt`, or `nil` once the
    /// timeout is spent.
    public func delay(attempt: Int) -> Int? {
        let delay = attempt < Self.delays.count ? Self.delays[attempt] : 100
        let prior = waited(beforeAttempt: attempt)
        let remaining = timeoutMilliseconds - prior
        guard remaining > 0 else { return nil }
        return min(delay, remaining)
    }
}
