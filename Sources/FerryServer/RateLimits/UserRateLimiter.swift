import Synchronization

/// Every user's token buckets, one per kind of traffic.
///
/// Buckets live in memory on each instance (several instances on
/// PostgreSQL each allow a user the configured rate); a bucket that has
/// refilled is forgotten at the next sweep, so idle users cost nothing.
///
/// ```swift
/// let limiter = UserRateLimiter(RateLimits())
/// if case .refused(let retryAfter) = limiter.take(.push, user: "alice") { /* answer 429 */ }
/// ```
final class UserRateLimiter: Sendable {
    enum Kind: String, Sendable, CaseIterable {
        case push
        case request
        case blobBytes = "blob_bytes"
    }

    private struct Key: Hashable {
        let user: String
        let kind: Kind
    }

    private struct State {
        var buckets: [Key: TokenBucket] = [:]
        var operations = 0

        /// Every few thousand operations with as many buckets, forgets the full ones.
        mutating func sweep(at now: Duration) {
            operations += 1
            guard operations >= UserRateLimiter.sweepEvery, buckets.count >= UserRateLimiter.sweepEvery else { return }
            operations = 0
            buckets = buckets.filter { !$0.value.isFull(at: now) }
        }
    }

    /// Buckets held before a sweep forgets the full ones.
    static let sweepEvery = 4096

    let limits: RateLimits
    private let start = ContinuousClock.now
    private let state = Mutex(State())

    init(_ limits: RateLimits) {
        self.limits = limits
    }

    func rate(of kind: Kind) -> RateLimit? {
        switch kind {
        case .push: limits.pushes
        case .request: limits.requests
        case .blobBytes: limits.blobBytes
        }
    }

    /// Takes `cost` from the user's bucket, or says why not (see ``TokenBucket/take(_:at:mayHold:)``).
    func take(_ kind: Kind, user: String, cost: Double = 1, mayHold: Bool = true) -> TokenBucket.Decision {
        guard let rate = rate(of: kind) else { return .admitted }
        let now = ContinuousClock.now - start
        return state.withLock { state in
            state.sweep(at: now)
            return state.buckets[Key(user: user, kind: kind), default: TokenBucket(rate, at: now)]
                .take(cost, at: now, mayHold: mayHold)
        }
    }

    /// Charges a cost known only after the request was served.
    func charge(_ kind: Kind, user: String, cost: Double) {
        guard let rate = rate(of: kind), cost > 0 else { return }
        let now = ContinuousClock.now - start
        state.withLock { state in
            state.buckets[Key(user: user, kind: kind), default: TokenBucket(rate, at: now)].charge(cost, at: now)
        }
    }
}
