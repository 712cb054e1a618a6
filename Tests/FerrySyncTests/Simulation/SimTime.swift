@_spi(Benchmarks) import Ferry
import FerryTesting
import Foundation
import Synchronization

/// The simulation's time: one counter of milliseconds every device's wall
/// clock, every engine's clock and every server's `now` read, moved only by
/// the simulation (a step passes) and by sleeps (which pass at once). With
/// it and the seeded random sources, nothing a run decides depends on the
/// machine's clock, so a seed replays exactly.
final class SimTime: Sendable {
    private let milliseconds: Mutex<Int64>

    /// Starts at `start` (Unix milliseconds): a fixed instant, the same for every run.
    init(start: Int64 = 1_790_000_000_000) {
        milliseconds = Mutex(start)
    }

    var nowMilliseconds: Int64 { milliseconds.withLock { $0 } }
    var date: Date { Date(timeIntervalSince1970: Double(nowMilliseconds) / 1000) }

    func advance(by duration: Duration) {
        // Whole milliseconds, rounded up: a sleep always moves the time past its deadline.
        let (seconds, attoseconds) = duration.components
        let perMillisecond: Int64 = 1_000_000_000_000_000
        let ms = seconds * 1000 + attoseconds / perMillisecond + (attoseconds % perMillisecond > 0 ? 1 : 0)
        milliseconds.withLock { $0 += max(ms, 0) }
    }

    /// The devices' wall clock.
    var wallClock: WallClockView { WallClockView(time: self) }
    /// The engines' clock.
    var clock: SimClock { SimClock(time: self) }

    struct WallClockView: WallClock {
        let time: SimTime
        func nowMilliseconds() -> Int64 { time.nowMilliseconds }
    }
}

/// A `Clock` on ``SimTime``: `sleep` moves the time to the deadline and
/// returns at once, so retry delays and jitter cost no real time and leave
/// no trace of the machine's speed.
struct SimClock: Clock {
    struct Instant: InstantProtocol {
        var offset: Duration

        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    let time: SimTime

    var now: Instant { Instant(offset: .milliseconds(time.nowMilliseconds)) }
    var minimumResolution: Duration { .milliseconds(1) }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
        let wait = now.duration(to: deadline)
        if wait > .zero { time.advance(by: wait) }
    }
}

/// A seeded source of `0..<1` doubles, shared safely: the engines' jitter.
final class SimRandom: Sendable {
    private let generator: Mutex<SplitMix64>

    init(seed: UInt64) {
        generator = Mutex(SplitMix64(mixing: seed))
    }

    func unit() -> Double {
        generator.withLock { Double($0.next() >> 11) / Double(1 << 53) }
    }
}
