@testable import Ferry
import Testing

/// The background loop's decisions, without sockets or sleeps.
@Suite struct BackgroundDecisionsTests {
    static let retry = RetryPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(1), multiplier: 2, attemptsPerSync: 3)

    @Test func aLocalWriteWaitsForTheDebounceAndNewsSyncsNow() {
        let decisions = BackgroundDecisions(debounce: .milliseconds(200), retry: Self.retry)
        #expect(decisions.wait(before: .localChange) == .milliseconds(200))
        #expect(decisions.wait(before: .now) == .zero)
    }

    @Test func aFailedSourceBacksOffOnItsOwnAndStartsOverOnceItRuns() {
        var decisions = BackgroundDecisions(debounce: .zero, retry: Self.retry)
        // Full jitter at unit 1: the capped exponential itself.
        #expect(decisions.failed(.observation, unit: 1) == .milliseconds(100))
        #expect(decisions.failed(.observation, unit: 1) == .milliseconds(200))
        #expect(decisions.failed(.observation, unit: 1) == .milliseconds(400))
        // Another source's backoff is its own.
        #expect(decisions.failed(.live, unit: 1) == .milliseconds(100))
        // A rate limit's Retry-After (the live stream refused with 429) is a floor.
        var limited = BackgroundDecisions(debounce: .zero, retry: Self.retry)
        #expect(limited.failed(.live, unit: 1, retryAfter: .seconds(3)) == .seconds(3))
        #expect(decisions.failed(.observation, unit: 0.5) == .milliseconds(400))
        for _ in 0..<10 { _ = decisions.failed(.observation, unit: 1) }
        #expect(decisions.failed(.observation, unit: 1) == .seconds(1), "capped")
        decisions.ran(.observation)
        #expect(decisions.failureCount(.observation) == 0)
        #expect(decisions.failed(.observation, unit: 1) == .milliseconds(100))
        #expect(decisions.failureCount(.live) == 1)
    }
}
