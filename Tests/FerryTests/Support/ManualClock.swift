@testable import Ferry

/// A wall clock the test sets by hand.
final class ManualClock: WallClock {
    private let now: Locked<Int64>

    init(_ milliseconds: Int64) {
        now = Locked(milliseconds)
    }

    func nowMilliseconds() -> Int64 { now.withLock { $0 } }

    func set(_ milliseconds: Int64) { now.withLock { $0 = milliseconds } }

    func advance(_ milliseconds: Int64) { now.withLock { $0 += milliseconds } }
}
