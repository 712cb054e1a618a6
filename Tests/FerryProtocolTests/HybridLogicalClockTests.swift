import FerryProtocol
import Foundation
import Testing

@Suite struct HybridLogicalClockTests {
    @Test func stampsIncreaseWithTheWallClock() {
        var clock = HybridLogicalClock()
        let a = clock.tick(physicalMilliseconds: 1_000)
        let b = clock.tick(physicalMilliseconds: 2_000)
        #expect(a == HLCTimestamp(wallMilliseconds: 1_000, counter: 0))
        #expect(b == HLCTimestamp(wallMilliseconds: 2_000, counter: 0))
    }

    @Test func staysMonotonicWhenTheWallClockJumpsBackwards() {
        var clock = HybridLogicalClock()
        var previous = clock.tick(physicalMilliseconds: 10_000_000)
        // An hour backwards, then creeping forward but still behind.
        for physical in [Int64(10_000_000 - 3_600_000), 1, 5_000, 9_999_999, 10_000_000, 10_000_000] {
            let next = clock.tick(physicalMilliseconds: physical)
            #expect(next > previous)
            #expect(next.wallMilliseconds == 10_000_000)
            previous = next
        }
        #expect(clock.tick(physicalMilliseconds: 10_000_001) == HLCTimestamp(wallMilliseconds: 10_000_001, counter: 0))
    }

    @Test func counterOverflowMovesToTheNextMillisecond() {
        var clock = HybridLogicalClock(latest: HLCTimestamp(wallMilliseconds: 500, counter: .max))
        let next = clock.tick(physicalMilliseconds: 500)
        #expect(next == HLCTimestamp(wallMilliseconds: 501, counter: 0))
    }

    @Test func receiveOrdersAfterBothClocks() {
        var clock = HybridLogicalClock()
        _ = clock.tick(physicalMilliseconds: 1_000)
        let remote = HLCTimestamp(wallMilliseconds: 5_000, counter: 7)
        let merged = clock.receive(remote, physicalMilliseconds: 1_001)
        #expect(merged > remote)
        #expect(clock.tick(physicalMilliseconds: 1_002) > merged)
    }

    @Test(arguments: [Int64(0), 1, 1_700_000_000_123, (Int64(1) << 47) - 1])
    func packsAndUnpacks(wall: Int64) throws {
        for counter: UInt16 in [0, 1, 12_345, .max] {
            let stamp = HLCTimestamp(wallMilliseconds: wall, counter: counter)
            #expect(stamp.wallMilliseconds == wall)
            #expect(stamp.counter == counter)
            let json = try JSONEncoder().encode(stamp)
            #expect(try JSONDecoder().decode(HLCTimestamp.self, from: json) == stamp)
        }
    }

    @Test func orderMatchesWallThenCounter() {
        let stamps = [
            HLCTimestamp(wallMilliseconds: 2, counter: 0),
            HLCTimestamp(wallMilliseconds: 1, counter: 9),
            HLCTimestamp(wallMilliseconds: 1, counter: 10),
        ]
        #expect(stamps.sorted() == [stamps[1], stamps[2], stamps[0]])
    }
}
