import Foundation

extension Duration {
    /// The duration in seconds, for `Date` arithmetic.
    package var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// The duration in whole milliseconds, for HLC wall-time comparisons.
    package var wholeMilliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
