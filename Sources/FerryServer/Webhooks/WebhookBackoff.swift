/// What a webhook does after an attempt: pure, so the schedule is tested
/// without a receiver.
///
/// ```swift
/// var state = WebhookState(name: "notify")
/// state = WebhookBackoff.failed(state, error: "HTTP 500", maxFailures: 3)   // failures 1, not parked
/// WebhookBackoff.delay(afterFailures: 3, initial: .milliseconds(500), max: .seconds(60))   // 2 s
/// ```
enum WebhookBackoff {
    /// The state after a batch was delivered: the cursor moves past it.
    static func delivered(_ state: WebhookState, cursor: String, now: Int64) -> WebhookState {
        var state = state
        (state.cursor, state.failures, state.lastError, state.deliveredAt) = (cursor, 0, nil, now)
        return state
    }

    /// The state after a failed attempt: parked once `maxFailures` in a row failed.
    static func failed(_ state: WebhookState, error: String, maxFailures: Int) -> WebhookState {
        var state = state
        state.failures += 1
        state.lastError = error
        state.parked = state.failures >= maxFailures
        return state
    }

    /// The wait before the next attempt: `initial` doubled per failure beyond the first, at most `max`.
    static func delay(afterFailures failures: Int, initial: Duration, max: Duration) -> Duration {
        guard failures > 0 else { return .zero }
        let doublings = min(failures - 1, 30)
        let delay = initial * (1 << doublings)
        return delay > max ? max : delay
    }
}
