@testable import FerryServer
import Crypto
import Testing

/// Where a pull starts: the two kinds of reset (ARCHITECTURE.md server semantic 6).
@Suite struct PullStartTests {
    static let key = SymmetricKey(size: .bits256)
    /// The store was opened in g1 (ended at 40, when the file was copied),
    /// and is now in g2.
    static let store = PullCursorCodec(
        epoch: "e", key: key,
        history: StoreHistory(current: "g2", ended: ["g1": ChangePosition(major: 40)]))

    static func cursor(generation: String, at position: Int64, epoch: String = "e") -> String {
        PullCursorCodec(
            epoch: epoch, key: epoch == "e" ? key : SymmetricKey(size: .bits256),
            history: StoreHistory(current: generation, ended: [:])
        )
        .encode(PullCursor(epoch: epoch, scope: "team:x", position: position))
    }

    static func start(_ cursor: String, horizon: Int64 = 10, end: Int64 = 100) throws -> PullStart {
        try PullStart(
            cursor: cursor, scope: "team:x", codec: store, horizon: ChangePosition(major: horizon),
            end: ChangePosition(major: end))
    }

    @Test func aCursorInHeldHistoryGoesOn() throws {
        #expect(try Self.start(Self.cursor(generation: "g1", at: 40)) == .after(ChangePosition(major: 40)))
        #expect(try Self.start(Self.cursor(generation: "g2", at: 90)) == .after(ChangePosition(major: 90)))
    }

    @Test func aCursorBehindTheHorizonIsAnOrdinaryReset() throws {
        let start = try Self.start(Self.cursor(generation: "g1", at: 5))
        #expect(start == .fromScratch(.behindHorizon))
        #expect(start.isReset && !start.isLostHistory)
    }

    /// A copy of the store restored after it had issued this cursor: new
    /// writes carried the version past it (end 100), but g1 ended at 40.
    @Test func aCursorPastWhereItsGenerationEndedPointsIntoLostHistory() throws {
        #expect(try Self.start(Self.cursor(generation: "g1", at: 41)) == .fromScratch(.lostHistory))
    }

    @Test func aCursorOfAGenerationTheStoreNeverKnewPointsIntoLostHistory() throws {
        #expect(try Self.start(Self.cursor(generation: "g9", at: 20)) == .fromScratch(.lostHistory))
    }

    @Test func aCursorAheadOfTheStoreOrFromAnotherEpochPointsIntoLostHistory() throws {
        #expect(try Self.start(Self.cursor(generation: "g2", at: 120)) == .fromScratch(.lostHistory))
        #expect(try Self.start(Self.cursor(generation: "g2", at: 20, epoch: "other")) == .fromScratch(.lostHistory))
    }
}
