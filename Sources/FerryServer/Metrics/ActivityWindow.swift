/// The last few minutes of requests in ten-second buckets, for the
/// console's charts: pushes and pulls per second with their p50 and p99,
/// and errors by status. A value type; ``ServerMetrics`` keeps one behind a lock.
///
/// ```swift
/// var window = ActivityWindow()
/// window.record(route: "/v1/push", status: 200, milliseconds: 4.2, at: now)
/// let points = window.series(.push, now: now)   // oldest bucket first
/// ```
struct ActivityWindow: Sendable {
    /// Which requests a series counts.
    enum Kind: String, Sendable, CaseIterable { case push, pull }

    static let bucketMilliseconds: Int64 = 10_000
    static let buckets = 30
    /// Latencies kept per bucket and kind; past it, every other sample is dropped.
    static let maxSamples = 2048

    struct Bucket: Sendable {
        var start: Int64
        var latencies: [Kind: [Double]] = [:]
        var counts: [Kind: Int] = [:]
        var errors: [Int: Int] = [:]
    }

    /// One bucket of one series.
    struct Point: Sendable, Hashable {
        var start: Int64
        var perSecond: Double
        var p50: Double?
        var p99: Double?
    }

    private(set) var ring: [Bucket] = []
    /// Live streams and open connections, as last reported.
    var liveSubscribers = 0
    var openConnections = 0

    static func kind(of route: String) -> Kind? {
        if route.hasSuffix("/push") { return .push }
        if route.hasSuffix("/pull") { return .pull }
        return nil
    }

    mutating func record(route: String, status: Int, milliseconds: Double, at now: Int64) {
        let start = now - now % Self.bucketMilliseconds
        // By its start: requests finishing out of order across a bucket boundary land in their own bucket.
        let index: Int
        if let found = ring.lastIndex(where: { $0.start == start }) {
            index = found
        } else {
            ring.removeAll { $0.start <= start - Int64(Self.buckets) * Self.bucketMilliseconds }
            ring.append(Bucket(start: start))
            ring.sort { $0.start < $1.start }
            index = ring.lastIndex { $0.start == start }!
        }
        if status >= 400 { ring[index].errors[status, default: 0] += 1 }
        guard let kind = Self.kind(of: route) else { return }
        ring[index].counts[kind, default: 0] += 1
        var samples = ring[index].latencies[kind, default: []]
        if samples.count >= Self.maxSamples { samples = samples.enumerated().filter { $0.offset.isMultiple(of: 2) }.map(\.element) }
        samples.append(milliseconds)
        ring[index].latencies[kind] = samples
    }

    /// ``buckets`` points ending with the current bucket, empty buckets included.
    func series(_ kind: Kind, now: Int64) -> [Point] {
        let current = now - now % Self.bucketMilliseconds
        return (0..<Self.buckets).reversed().map { back in
            let start = current - Int64(back) * Self.bucketMilliseconds
            guard let bucket = ring.first(where: { $0.start == start }) else { return Point(start: start, perSecond: 0) }
            let sorted = (bucket.latencies[kind] ?? []).sorted()
            return Point(
                start: start, perSecond: Double(bucket.counts[kind] ?? 0) / Double(Self.bucketMilliseconds / 1000),
                p50: Self.quantile(sorted, 0.5), p99: Self.quantile(sorted, 0.99))
        }
    }

    /// Error responses by status over the whole window.
    func errors(now: Int64) -> [Int: Int] {
        let oldest = now - now % Self.bucketMilliseconds - Int64(Self.buckets - 1) * Self.bucketMilliseconds
        return ring.filter { $0.start >= oldest }.reduce(into: [:]) { total, bucket in total.merge(bucket.errors, uniquingKeysWith: +) }
    }

    /// The nearest-rank quantile of sorted values.
    static func quantile(_ sorted: [Double], _ q: Double) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let rank = Int((q * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }
}
