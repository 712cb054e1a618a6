import Foundation

/// The source of physical time for Ferry's hybrid logical clock and telemetry.
///
/// Tests inject a clock they control (one that jumps backwards, say); apps use
/// ``SystemWallClock``.
///
/// ```swift
/// struct FixedClock: WallClock {
///     func nowMilliseconds() -> Int64 { 1_700_000_000_000 }
/// }
/// ```
public protocol WallClock: Sendable {
    /// Unix time in milliseconds.
    func nowMilliseconds() -> Int64
}

/// The device's wall clock.
public struct SystemWallClock: WallClock {
    public init() {}

    public func nowMilliseconds() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }
}
