/// A small seeded generator, so random faults repeat run to run (and
/// `ferry-bench` queries the same rows each run).
///
/// ```swift
/// var random = SplitMix64(mixing: seed)
/// let index = Int.random(in: 0..<10, using: &random)
/// ```
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    /// A generator whose stream shares nothing with the stream of a
    /// neighbouring seed: the seed goes through SplitMix64's finalizer
    /// first. (Seeded directly, seed k + 1's stream is seed k's shifted by
    /// one draw, so neighbouring seeds replay nearly the same run.)
    public init(mixing seed: UInt64) {
        state = Self.mix(seed)
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return Self.mix(state)
    }

    /// SplitMix64's finalizer: a bijection that scatters neighbouring inputs.
    public static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
