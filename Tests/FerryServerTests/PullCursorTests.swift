@testable import FerryServer
import Crypto
import Testing

@Suite struct PullCursorTests {
    static let codec = PullCursorCodec(epoch: "epoch-1", key: SymmetricKey(size: .bits256))

    @Test func roundTrips() throws {
        let text = Self.codec.encode(PullCursor(epoch: "epoch-1", scope: "team:x", position: 42, subposition: 7))
        #expect(try Self.codec.decode(text, scope: "team:x") == .position(42, 7))
    }

    @Test func cursorsFromAnotherEpochAskForAReset() throws {
        let other = PullCursorCodec(epoch: "epoch-2", key: SymmetricKey(size: .bits256))
        let text = other.encode(PullCursor(epoch: "epoch-2", scope: "team:x", position: 42))
        #expect(try Self.codec.decode(text, scope: "team:x") == .otherEpoch)
    }

    @Test func forgedCursorsAreRefused() {
        // Same epoch, signed with another key: somebody edited the position.
        let forger = PullCursorCodec(epoch: "epoch-1", key: SymmetricKey(size: .bits256))
        let text = forger.encode(PullCursor(epoch: "epoch-1", scope: "team:x", position: 1))
        #expect(throws: PullCursorCodec.Invalid.forged) { try Self.codec.decode(text, scope: "team:x") }
    }

    @Test func aCursorBelongsToItsScope() {
        let text = Self.codec.encode(PullCursor(epoch: "epoch-1", scope: "team:x", position: 1))
        #expect(throws: PullCursorCodec.Invalid.wrongScope) { try Self.codec.decode(text, scope: "team:y") }
    }

    @Test(arguments: ["", ".", "abc", "abc.def", "!!!.???", String(repeating: "a", count: 5000), "YzF8ZXBvY2gtMXx0ZWFtOnh8LTF8MA.AAAA"])
    func garbledCursorsAreRefused(text: String) {
        #expect(throws: PullCursorCodec.Invalid.self) { try Self.codec.decode(text, scope: "team:x") }
    }
}
