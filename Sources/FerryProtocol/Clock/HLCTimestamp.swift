/// A hybrid logical clock stamp: wall-clock milliseconds plus a logical counter.
///
/// Stamps order edits across devices whose clocks disagree. They pack into one
/// `Int64` (48 bits of Unix milliseconds, 16 bits of counter) so they sort as
/// plain integers in SQLite and PostgreSQL.
///
/// ```swift
/// let stamp = HLCTimestamp(wallMilliseconds: 1_700_000_000_000, counter: 3)
/// let restored = HLCTimestamp(rawValue: stamp.rawValue)
/// assert(restored == stamp)
/// ```
public struct HLCTimestamp: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The packed value: `wallMilliseconds << 16 | counter`.
    public let rawValue: Int64

    /// The largest counter value; the clock moves to the next millisecond past it.
    public static let maxCounter: UInt16 = .max

    /// The stamp before every other.
    public static let zero = HLCTimestamp(rawValue: 0)

    public init(rawValue: Int64) {
        self.rawValue = rawValue
    }

    /// Creates a stamp from its parts.
    ///
    /// - precondition: `wallMilliseconds` fits in 47 bits (until year 6429).
    public init(wallMilliseconds: Int64, counter: UInt16) {
        precondition(wallMilliseconds >= 0 && wallMilliseconds < (1 << 47), "HLC wall time out of range")
        self.rawValue = wallMilliseconds << 16 | Int64(counter)
    }

    /// Unix time in milliseconds.
    public var wallMilliseconds: Int64 { rawValue >> 16 }

    /// The logical counter that orders stamps within one millisecond.
    public var counter: UInt16 { UInt16(truncatingIfNeeded: rawValue & 0xFFFF) }

    public static func < (lhs: HLCTimestamp, rhs: HLCTimestamp) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    public var description: String { "\(wallMilliseconds).\(counter)" }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self.init(rawValue: try container.decode(Int64.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
