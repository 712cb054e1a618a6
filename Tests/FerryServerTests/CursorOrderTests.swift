@testable import FerryServer
import Crypto
import FerryProtocol
import Testing

/// The client reads a cursor's place in the change order from the cursor
/// the server signs: the two agree, and cursors of another epoch, scope or
/// store generation never compare.
struct CursorOrderTests {
    let codec = PullCursorCodec(epoch: "e1", key: SymmetricKey(size: .bits256))

    @Test func theClientReadsWhatTheServerEncodes() throws {
        let text = codec.encode(PullCursor(epoch: "e1", scope: "user:alice", position: 42, subposition: 7))
        let order = try #require(CursorOrder(text))
        #expect(order.epoch == "e1" && order.scope == "user:alice" && order.position == 42 && order.subposition == 7)
        #expect(try codec.decode(text, scope: "user:alice") == .position(42, 7, generation: order.generation))
        #expect(CursorOrder("garbage") == nil && CursorOrder(nil) == nil && CursorOrder("Yz.x") == nil)
    }

    @Test func aPageCoversTheCursorsFromItsStartToItsEnd() {
        func at(_ position: Int64, _ subposition: Int64 = 0, scope: String = "user:alice", codec: PullCursorCodec? = nil) -> CursorOrder? {
            CursorOrder((codec ?? self.codec).encode(PullCursor(epoch: (codec ?? self.codec).epoch, scope: scope, position: position, subposition: subposition)))
        }
        #expect(CursorOrder.covers(at(10), from: at(10), to: at(20)))
        #expect(CursorOrder.covers(at(15), from: at(10), to: at(20)))
        #expect(CursorOrder.covers(at(20), from: at(10), to: at(20)))
        #expect(CursorOrder.covers(at(10, 5), from: at(10, 1), to: at(11)))
        #expect(!CursorOrder.covers(at(9), from: at(10), to: at(20)), "a gap before the page")
        #expect(!CursorOrder.covers(at(21), from: at(10), to: at(20)), "already past the page")
        #expect(!CursorOrder.covers(at(10, 2), from: at(10, 3), to: at(20)))
        #expect(!CursorOrder.covers(at(15, scope: "trip@alice"), from: at(10), to: at(20)), "another scope")
        let otherEpoch = PullCursorCodec(epoch: "e2", key: SymmetricKey(size: .bits256))
        #expect(!CursorOrder.covers(at(15, codec: otherEpoch), from: at(10), to: at(20)), "another epoch")
        var restored = codec
        restored.history = StoreHistory(current: "g2", ended: [:])
        #expect(!CursorOrder.covers(at(15, codec: restored), from: at(10), to: at(20)), "another store generation")
    }
}
