/// How many wrong admin tokens the console's sign-in takes from one address:
/// ``limit`` in any ``window``, then none until the oldest of them ages out
/// (the form answers 429 with the wait). A right token clears the
/// address's count. Kept in memory, per instance, like the sessions.
///
/// ```swift
/// var throttle = ConsoleSignInThrottle()
/// throttle.failed("10.0.0.7", now: now)            // five times…
/// throttle.wait(for: "10.0.0.7", now: now)         // 60_000: refused for a minute
/// ```
struct ConsoleSignInThrottle: Sendable {
    /// Wrong tokens an address may send within ``window``.
    var limit = 5
    /// Milliseconds over which wrong tokens are counted.
    var window: Int64 = 60_000
    /// The most addresses remembered; the one that failed longest ago goes first.
    var capacity = 4096
    private var failures: [String: [Int64]] = [:]

    /// Milliseconds until `address` may try again; 0 when it may now.
    func wait(for address: String, now: Int64) -> Int64 {
        let recent = (failures[address] ?? []).filter { now - $0 < window }
        guard recent.count >= limit else { return 0 }
        return recent[recent.count - limit] + window - now
    }

    /// Counts a wrong token from `address`.
    mutating func failed(_ address: String, now: Int64) {
        if failures[address] == nil, failures.count >= capacity {
            failures = failures.filter { ($0.value.last ?? 0) > now - window }
            if failures.count >= capacity, let stalest = failures.min(by: { ($0.value.last ?? 0) < ($1.value.last ?? 0) }) {
                failures[stalest.key] = nil
            }
        }
        failures[address, default: []] = (failures[address] ?? []).filter { now - $0 < window }.suffix(limit) + [now]
    }

    /// Forgets `address`'s wrong tokens: it signed in.
    mutating func succeeded(_ address: String) {
        failures[address] = nil
    }
}
