@testable import Ferry
import FerryProtocol
import Testing

/// What a sync's pull expects in all, from the server's estimates: never
/// below what was applied, never shrinking while the pull runs, and the
/// count applied once it ends.
struct PullEstimateTests {
    @Test func noEstimateUntilAPageCarriesOne() {
        var estimate = PullEstimate()
        estimate.applied(40, of: "user:alice", estimate: nil)
        #expect(estimate.total == nil && estimate.applied == 40)
        estimate.applied(10, of: "trip@alice", estimate: 100)
        #expect(estimate.total == 140, "the 40 already applied, and the 100 the new scope sends")
    }

    @Test func aScopeThatSendsMoreThanItsEstimateHasNoneLeft() {
        var estimate = PullEstimate()
        estimate.applied(500, of: "s", estimate: 1000)
        #expect(estimate.total == 1000)
        estimate.applied(500, of: "s", estimate: nil)
        estimate.applied(300, of: "s", estimate: nil)  // rows written meanwhile
        #expect(estimate.total == 1300 && estimate.applied == 1300)
        estimate.finish()
        #expect(estimate.total == 1300)
    }

    @Test func aScopeStartedOverWithLessDoesNotShrinkTheTotal() {
        var estimate = PullEstimate()
        estimate.applied(100, of: "s", estimate: 1000)
        estimate.applied(50, of: "s", estimate: 200)  // reset: the scope now sends 200 in all
        #expect(estimate.total == 1000)
        estimate.finish()
        #expect(estimate.total == 150)
    }

    @Test func anOverestimateEndsAtTheCountApplied() {
        var estimate = PullEstimate()
        estimate.applied(200, of: "s", estimate: 1000)
        estimate.applied(100, of: "s", estimate: nil)
        #expect(estimate.total == 1000)
        estimate.finish()
        #expect(estimate.total == 300)
    }

    /// Seeded pages over three scopes: the total never shrinks before the
    /// end, never falls below what was applied, and ends equal to it.
    @Test func theTotalIsMonotonicAndEndsAtTheApplied() {
        var random = SplitMix(seed: 0xFE22)
        for _ in 0..<200 {
            var estimate = PullEstimate()
            var previous = 0
            for _ in 0..<Int(random.next() % 30) {
                let scope = ["a", "b", "c"][Int(random.next() % 3)]
                let rows = Int(random.next() % 50)
                let guess: Int? = random.next() % 5 == 0 ? Int(random.next() % 400) : nil
                estimate.applied(rows, of: scope, estimate: guess)
                if let total = estimate.total {
                    #expect(total >= estimate.applied)
                    #expect(total >= previous)
                    previous = total
                }
            }
            estimate.finish()
            #expect(estimate.total == nil || estimate.total == estimate.applied)
        }
    }
}

/// A small seeded generator, so a failure replays.
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
