@testable import FerryServer
import Crypto
import Foundation
import Testing

@Suite struct PullCursorTests {
    static let codec = PullCursorCodec(epoch: "epoch-1", key: SymmetricKey(size: .bits256))

    @Test func roundTrips() throws {
        let text = Self.codec.encode(PullCursor(epoch: "epoch-1", scope: "team:x", position: 42, subposition: 7))
        #expect(try Self.codec.decode(text, scope: "team:x") == .position(42, 7, generation: ""))
    }

    @Test func aCursorNamesTheGenerationThatIssuedIt() throws {
        let key = SymmetricKey(size: .bits256)
        let old = PullCursorCodec(epoch: "e", key: key, history: StoreHistory(current: "g1", ended: [:]))
        let new = PullCursorCodec(epoch: "e", key: key, history: StoreHistory(current: "g2", ended: ["g1": ChangePosition(major: 40)]))
        let text = old.encode(PullCursor(epoch: "e", scope: "team:x", position: 42))
        #expect(try new.decode(text, scope: "team:x") == .position(42, 0, generation: "g1"))
    }

    @Test func cursorsIssuedBeforeGenerationsNameTheEmptyOne() throws {
        // A `c1` cursor, as stores before generations signed them.
        let key = SymmetricKey(size: .bits256)
        let payload = Data("c1|e|team:x|42|0".utf8)
        let mac = Data(HMAC<SHA256>.authenticationCode(for: payload, using: key))
        func base64URL(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let codec = PullCursorCodec(epoch: "e", key: key, history: StoreHistory(current: "g1", ended: ["": ChangePosition(major: 50)]))
        #expect(try codec.decode(base64URL(payload) + "." + base64URL(mac), scope: "team:x") == .position(42, 0, generation: ""))
    }

    /// A cursor that did not move comes back as it was given; one that
    /// moved, or was issued in another generation, is signed anew.
    @Test func aCursorThatDidNotMoveIsHandedBack() throws {
        let key = SymmetricKey(size: .bits256)
        let old = PullCursorCodec(epoch: "e", key: key, history: StoreHistory(current: "g1", ended: [:]))
        let new = PullCursorCodec(epoch: "e", key: key, history: StoreHistory(current: "g2", ended: ["g1": ChangePosition(major: 40)]))
        let at42 = PullCursor(epoch: "e", scope: "team:x", position: 42)
        let given = new.encode(at42)
        #expect(new.encode(at42, reusing: given) == given)
        #expect(new.encode(at42, reusing: nil) == given)
        let at43 = PullCursor(epoch: "e", scope: "team:x", position: 43)
        #expect(new.encode(at43, reusing: given) == new.encode(at43))
        let fromG1 = old.encode(at42)
        #expect(new.encode(at42, reusing: fromG1) == given, "re-signed in the current generation")
        #expect(new.encode(at42, reusing: "garbled") == given)
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
