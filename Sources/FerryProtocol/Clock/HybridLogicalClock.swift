/// A hybrid logical clock (Kulkarni et al., 2014) as a pure value.
///
/// Every stamp it issues is greater than every stamp it issued or received
/// before, even when the wall clock jumps backwards: the clock keeps the
/// highest wall time it has seen and counts within it. The caller supplies
/// the physical time, so tests drive the clock with any time they like.
///
/// ```swift
/// var clock = HybridLogicalClock()
/// let a = clock.tick(physicalMilliseconds: 1_000)
/// let b = clock.tick(physicalMilliseconds: 900)   // the wall clock went back
/// assert(b > a)
/// ```
public struct HybridLogicalClock: Sendable, Hashable {
    /// The latest stamp issued or received.
    public private(set) var latest: HLCTimestamp

    /// Creates a clock that issues stamps after `latest` (restored from storage).
    public init(latest: HLCTimestamp = .zero) {
        self.latest = latest
    }

    /// Issues a stamp for a local event.
    public mutating func tick(physicalMilliseconds: Int64) -> HLCTimestamp {
        let physical = max(physicalMilliseconds, 0)
        if physical > latest.wallMilliseconds {
            latest = HLCTimestamp(wallMilliseconds: physical, counter: 0)
        } else {
            latest = Self.successor(of: latest)
        }
        return latest
    }

    /// Merges a stamp received from elsewhere and issues the stamp of the
    /// receive event, greater than both.
    public mutating func receive(_ remote: HLCTimestamp, physicalMilliseconds: Int64) -> HLCTimestamp {
        let physical = max(physicalMilliseconds, 0)
        let highest = max(latest, remote)
        if physical > highest.wallMilliseconds {
            latest = HLCTimestamp(wallMilliseconds: physical, counter: 0)
        } else {
            latest = Self.successor(of: highest)
        }
        return latest
    }

    /// The next stamp: the counter plus one, or the next millisecond when the
    /// counter is exhausted (so the clock never stalls or wraps).
    static func successor(of stamp: HLCTimestamp) -> HLCTimestamp {
        if stamp.counter == HLCTimestamp.maxCounter {
            return HLCTimestamp(wallMilliseconds: stamp.wallMilliseconds + 1, counter: 0)
        }
        return HLCTimestamp(wallMilliseconds: stamp.wallMilliseconds, counter: stamp.counter + 1)
    }
}
