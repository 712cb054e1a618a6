/// One token bucket: the decision alone, with time passed in.
///
/// A request is admitted while the bucket holds its cost (or a full burst,
/// for a cost larger than the burst), and takes it; a cost only known after
/// the fact (a download's size) is charged then, and may leave the bucket in
/// debt, which later requests wait out. A refusal says when to come back
/// (`Retry-After`, in whole seconds); a request that comes back sooner
/// ignored it, and is held until then instead of answered at once, so a
/// client that floods is slowed to one request per connection per wait and
/// costs the server almost nothing.
///
/// ```swift
/// var bucket = TokenBucket(RateLimit(perSecond: 2, burst: 2), at: .zero)
/// bucket.take(2, at: .zero)                       // .admitted
/// bucket.take(1, at: .zero)                       // .refused(retryAfter: .seconds(1))
/// bucket.take(1, at: .milliseconds(10))           // .hold(.milliseconds(990)): it was told to wait
/// ```
struct TokenBucket: Sendable, Equatable {
    enum Decision: Sendable, Equatable {
        case admitted
        /// Answer 429 with this `Retry-After` (whole seconds).
        case refused(retryAfter: Duration)
        /// The client was told to wait and did not: hold the request this long, then ask again.
        case hold(Duration)
    }

    let rate: RateLimit
    private(set) var tokens: Double
    private(set) var updated: Duration
    /// Until when the last refusal told its client to wait.
    private(set) var toldToWaitUntil: Duration?

    /// A full bucket at `now` (any monotonic time as a duration since a fixed start).
    init(_ rate: RateLimit, at now: Duration) {
        self.rate = rate
        tokens = rate.burst
        updated = now
    }

    /// Takes `cost`, or says why not. `mayHold: false` after a hold: refuse instead.
    mutating func take(_ cost: Double, at now: Duration, mayHold: Bool = true) -> Decision {
        refill(at: now)
        let needed = min(cost, rate.burst)
        if tokens >= needed {
            tokens -= cost
            return .admitted
        }
        if mayHold, let until = toldToWaitUntil, now < until {
            return .hold(until - now)
        }
        let retryAfter = Duration.seconds(max(1, ((needed - tokens) / rate.perSecond).rounded(.up)))
        toldToWaitUntil = now + retryAfter
        return .refused(retryAfter: retryAfter)
    }

    /// Charges a cost learnt after the request was admitted.
    mutating func charge(_ cost: Double, at now: Duration) {
        refill(at: now)
        tokens -= cost
    }

    /// Whether the bucket has refilled completely and told no one to wait: it can be forgotten.
    func isFull(at now: Duration) -> Bool {
        tokens + (now - updated).timeInterval * rate.perSecond >= rate.burst && toldToWaitUntil.map { $0 <= now } ?? true
    }

    private mutating func refill(at now: Duration) {
        guard now > updated else { return }
        tokens = min(rate.burst, tokens + (now - updated).timeInterval * rate.perSecond)
        updated = now
    }
}
