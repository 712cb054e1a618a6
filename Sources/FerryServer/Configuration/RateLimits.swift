/// How fast one user may go: token buckets per user for pushes, for other
/// requests (pulls, row reads, scope calls, blob requests) and for blob
/// bytes. A request over its bucket is answered 429 with `Retry-After`, which
/// the engine honours; other users are not slowed.
///
/// ```swift
/// var configuration = FerryServerConfiguration(jwtSecret: secret)
/// configuration.rateLimits.pushes = RateLimit(perSecond: 10, burst: 50)
/// configuration.rateLimits.blobBytes = nil   // no cap on attachment bytes
/// ```
///
/// `ferry-server` takes each as a flag: `--push-rate`, `--request-rate` and
/// `--blob-byte-rate`, written `PER_SECOND[/BURST]`, or `off`.
public struct RateLimits: Sendable, Hashable {
    /// `POST /v1/push`, per user. Default 30 a second, bursts of 300: a
    /// device back from a week offline drains 150,000 edits (batches of 500)
    /// before it waits.
    public var pushes: RateLimit? = RateLimit(perSecond: 30, burst: 300)
    /// Every other request under `/v1` (pulls, row reads, scopes, members,
    /// blob requests, live stream openings), per user. Default 100 a second,
    /// bursts of 1,000: an initial sync of a million rows in pages of 1,000
    /// never waits.
    public var requests: RateLimit? = RateLimit(perSecond: 100, burst: 1000)
    /// Attachment bytes up and down, per user. Default 64 MiB a second,
    /// bursts of 512 MiB. A transfer larger than the burst waits for a full
    /// bucket, then goes through whole and leaves the bucket in debt.
    public var blobBytes: RateLimit? = RateLimit(perSecond: 64 * 1_048_576, burst: 512 * 1_048_576)

    public init() {}

    /// No limits at all, for benchmarks and trusted callers.
    public static let unlimited: RateLimits = {
        var limits = RateLimits()
        (limits.pushes, limits.requests, limits.blobBytes) = (nil, nil, nil)
        return limits
    }()
}

/// A token bucket's shape: it refills at `perSecond` up to `burst`.
///
/// ```swift
/// let rate = try RateLimit(parsing: "20/100")   // 20 a second, bursts of 100
/// ```
public struct RateLimit: Sendable, Hashable, CustomStringConvertible {
    public var perSecond: Double
    public var burst: Double

    /// - precondition: both positive.
    public init(perSecond: Double, burst: Double) {
        precondition(perSecond > 0 && burst > 0, "a rate limit refills and holds something")
        self.perSecond = perSecond
        self.burst = burst
    }

    /// Parses `PER_SECOND` (a burst of ten seconds' worth) or
    /// `PER_SECOND/BURST`; `nil` for `off`.
    ///
    /// - Throws: ``FerryServerError`` (`badRequest`) naming what to write.
    public static func parse(_ text: String) throws(FerryServerError) -> RateLimit? {
        if text == "off" { return nil }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let perSecond = Double(parts[0]), perSecond.isFinite, perSecond > 0,
            parts.count == 1 || Double(parts[1]).map({ $0.isFinite && $0 >= 1 }) == true
        else {
            throw FerryServerError.badRequest("a rate is PER_SECOND or PER_SECOND/BURST with positive numbers, or off; got `\(text)`")
        }
        return RateLimit(perSecond: perSecond, burst: parts.count == 2 ? Double(parts[1])! : perSecond * 10)
    }

    public var description: String { "\(Self.format(perSecond))/\(Self.format(burst))" }

    private static func format(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
