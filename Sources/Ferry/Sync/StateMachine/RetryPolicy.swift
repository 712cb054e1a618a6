/// How long the engine waits before retrying after a transient failure:
/// capped exponential backoff with full jitter.
///
/// Attempt `n` (from 0) waits a random time in `0 ..< min(maximumDelay,
/// initialDelay × multiplierⁿ)`, so clients cut off together do not return
/// together; a server's `Retry-After` is a floor.
///
/// ```swift
/// var configuration = SyncConfiguration(userID: "alice")
/// configuration.retry = RetryPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(30), attemptsPerSync: 3)
/// ```
public struct RetryPolicy: Sendable, Hashable {
    /// The cap of the first wait.
    public var initialDelay: Duration
    /// No wait is longer than this (except a server's `Retry-After`).
    public var maximumDelay: Duration
    /// How much the cap grows per attempt.
    public var multiplier: Double
    /// How many attempts an explicit ``SyncEngine/sync()`` makes before it
    /// throws. The background loop retries without limit.
    public var attemptsPerSync: Int

    public init(
        initialDelay: Duration = .milliseconds(250), maximumDelay: Duration = .seconds(60),
        multiplier: Double = 2, attemptsPerSync: Int = 5
    ) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.multiplier = multiplier
        self.attemptsPerSync = attemptsPerSync
    }

    /// The wait before retry number `attempt` (0 is the first retry).
    ///
    /// - Parameters:
    ///   - attempt: the retry's number, from 0.
    ///   - retryAfter: the server's `Retry-After`, a floor for the wait.
    ///   - unit: a random number in `0 ..< 1` (the jitter).
    public func delay(attempt: Int, retryAfter: Duration? = nil, unit: Double) -> Duration {
        let initial = Self.seconds(initialDelay)
        let cap = min(Self.seconds(maximumDelay), initial * pow(multiplier, Double(max(0, min(attempt, 62)))))
        let jittered = Duration.milliseconds(Int64((cap * min(max(unit, 0), 1) * 1000).rounded()))
        guard let retryAfter else { return jittered }
        return max(retryAfter, jittered)
    }

    func validate() throws {
        guard initialDelay > .zero, maximumDelay >= initialDelay, multiplier >= 1, attemptsPerSync >= 1 else {
            throw FerryError(
                .invalidConfiguration,
                """
                a retry policy needs initialDelay > 0, maximumDelay ≥ initialDelay, multiplier ≥ 1 and attemptsPerSync ≥ 1; \
                got \(initialDelay), \(maximumDelay), \(multiplier), \(attemptsPerSync)
                """)
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    private func pow(_ base: Double, _ exponent: Double) -> Double {
        var result = 1.0
        for _ in 0..<Int(exponent) { result *= base }
        return result
    }
}
