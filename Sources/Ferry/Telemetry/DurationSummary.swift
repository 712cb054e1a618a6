/// Percentiles of a set of durations.
///
/// ```swift
/// let summary = DurationSummary([.milliseconds(1), .milliseconds(3)])
/// print(summary.p50, summary.max)
/// ```
public struct DurationSummary: Sendable, Hashable, CustomStringConvertible {
    public var count: Int
    public var p50: Duration
    public var p95: Duration
    public var p99: Duration
    public var max: Duration

    public init(_ durations: [Duration]) {
        let sorted = durations.sorted()
        count = sorted.count
        func percentile(_ p: Double) -> Duration {
            guard !sorted.isEmpty else { return .zero }
            // Nearest-rank percentile.
            let rank = Int((p * Double(sorted.count)).rounded(.up))
            return sorted[Swift.max(0, Swift.min(sorted.count - 1, rank - 1))]
        }
        p50 = percentile(0.50)
        p95 = percentile(0.95)
        p99 = percentile(0.99)
        max = sorted.last ?? .zero
    }

    public var description: String {
        func ms(_ d: Duration) -> String {
            let value = Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
            return String(format: "%.3fms", value)
        }
        return "n=\(count) p50=\(ms(p50)) p95=\(ms(p95)) p99=\(ms(p99)) max=\(ms(max))"
    }
}
