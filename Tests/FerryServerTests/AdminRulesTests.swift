import Crypto
import FerryProtocol
@testable import FerryServer
import Foundation
import Testing

/// The admin API's decisions, without a store or a socket: how a backend
/// write becomes a push, where the change feed starts, the webhook
/// schedule and signature, and the admin credential.
@Suite struct AdminRulesTests {
    @Test func aBackendWriteIsAPushOfItsOwnClient() {
        let request = BackendWriteRequest(
            writer: "moderation", requestID: "req-7",
            writes: [
                BackendWrite(scope: "user:alice", table: "note", rowID: "n1", columns: ["title": .text("x")]),
                BackendWrite(scope: "user:alice", table: "note", rowID: "n2", operation: .delete, columns: ["ignored": .integer(1)]),
                BackendWrite(scope: "team@bob", table: "item", rowID: "i1", columns: ["name": .text("y")], baseVersion: 3),
            ])
        let writer = BackendWriter(request)
        #expect(writer.userID == "server:moderation" && writer.clientID == "req-7")
        #expect(writer.rowsWithoutBase == [RowKey(scope: "user:alice", table: "note", rowID: "n1"), RowKey(scope: "user:alice", table: "note", rowID: "n2")])
        let push = writer.push(bases: [RowKey(scope: "user:alice", table: "note", rowID: "n1"): 41], now: 1_000)
        #expect(push.clientID == writer.clientID)
        #expect(push.mutations.map(\.mutationID) == [1, 2, 3])
        // A missing base is the row's current version (none: a new row); a given one is kept.
        #expect(push.mutations.map(\.baseVersion) == [41, nil, 3])
        #expect(push.mutations[1].columns.isEmpty && push.mutations[1].operation == .delete)
        #expect(push.mutations.allSatisfy { $0.hlc == HLCTimestamp(wallMilliseconds: 1_000, counter: 0) })
        // The same request is the same push: what makes a resend a replay.
        #expect(writer.push(bases: [RowKey(scope: "user:alice", table: "note", rowID: "n1"): 41], now: 1_000) == push)
    }

    @Test func theFeedStartsAtItsCursorOrOver() throws {
        let codec = PullCursorCodec(epoch: "e1", key: SymmetricKey(size: .bits256), history: StoreHistory(current: "g2", ended: ["g1": ChangePosition(major: 40)]))
        let end = ChangePosition(major: 100)
        #expect(try ChangeFeedCursor.start(nil, codec: codec, end: end) == .start)
        let at = ChangeFeedCursor.encode(ChangePosition(major: 60, minor: 2), codec: codec)
        #expect(try ChangeFeedCursor.start(at, codec: codec, end: end) == ChangePosition(major: 60, minor: 2))
        // Ahead of the store, or from an ended generation past its end: lost history, so from the beginning.
        #expect(try ChangeFeedCursor.start(at, codec: codec, end: ChangePosition(major: 50)) == .start)
        var old = codec
        old.history = StoreHistory(current: "g1", ended: [:])
        #expect(try ChangeFeedCursor.start(ChangeFeedCursor.encode(ChangePosition(major: 41), codec: old), codec: codec, end: end) == .start)
        #expect(try ChangeFeedCursor.start(ChangeFeedCursor.encode(ChangePosition(major: 39), codec: old), codec: codec, end: end) == ChangePosition(major: 39))
        // Another epoch's cursor starts over; a pull cursor, a forged or a garbled one is refused.
        let other = PullCursorCodec(epoch: "e0", key: SymmetricKey(size: .bits256))
        #expect(try ChangeFeedCursor.start(ChangeFeedCursor.encode(ChangePosition(major: 5), codec: other), codec: codec, end: end) == .start)
        let pull = codec.encode(PullCursor(epoch: "e1", scope: "user:alice", position: 5))
        let forged = PullCursorCodec(epoch: "e1", key: SymmetricKey(size: .bits256))
        for refused in [pull, ChangeFeedCursor.encode(ChangePosition(major: 5), codec: forged), "garbage"] {
            #expect(throws: FerryServerError.self) { try ChangeFeedCursor.start(refused, codec: codec, end: end) }
        }
    }

    @Test func aPageEndsPastWhatItHoldsOrAtTheEnd() throws {
        let codec = PullCursorCodec(epoch: "e1", key: SymmetricKey(size: .bits256))
        func entry(_ version: Int64) -> (entry: ChangeFeedEntry, position: ChangePosition) {
            (
                ChangeFeedEntry(scope: "s", table: "t", rowID: "r\(version)", version: version, deleted: false, values: [:], clientID: "c", changedAt: 0),
                ChangePosition(major: version)
            )
        }
        let full = ChangeFeedCursor.page([entry(3), entry(5), entry(9)], limit: 2, end: ChangePosition(major: 20), codec: codec)
        #expect(full.hasMore && full.changes.map(\.version) == [3, 5])
        #expect(try ChangeFeedCursor.start(full.cursor, codec: codec, end: ChangePosition(major: 20)) == ChangePosition(major: 5))
        // The last page, and an empty one (every change filtered out): the cursor moves to the end.
        let last = ChangeFeedCursor.page([entry(9)], limit: 2, end: ChangePosition(major: 20), codec: codec)
        #expect(!last.hasMore)
        #expect(try ChangeFeedCursor.start(last.cursor, codec: codec, end: ChangePosition(major: 20)) == ChangePosition(major: 20))
        let empty = ChangeFeedCursor.page([], limit: 2, end: ChangePosition(major: 20), codec: codec)
        #expect(empty.changes.isEmpty)
        #expect(try ChangeFeedCursor.start(empty.cursor, codec: codec, end: ChangePosition(major: 20)) == ChangePosition(major: 20))
    }

    @Test func aFailingWebhookBacksOffThenParks() {
        var state = WebhookState(name: "notify", cursor: "c0")
        state = WebhookBackoff.failed(state, error: "HTTP 500", maxFailures: 3)
        state = WebhookBackoff.failed(state, error: "HTTP 502", maxFailures: 3)
        #expect(state.failures == 2 && !state.parked && state.lastError == "HTTP 502" && state.cursor == "c0")
        state = WebhookBackoff.failed(state, error: "timeout", maxFailures: 3)
        #expect(state.parked)
        state = WebhookBackoff.delivered(state, cursor: "c1", now: 7)
        #expect(state.failures == 0 && state.lastError == nil && state.cursor == "c1" && state.deliveredAt == 7)
        let delays = (0...9).map { WebhookBackoff.delay(afterFailures: $0, initial: .milliseconds(500), max: .seconds(60)) }
        #expect(delays.prefix(5) == [.zero, .milliseconds(500), .seconds(1), .seconds(2), .seconds(4)])
        #expect(delays.last == .seconds(60))
        #expect(WebhookBackoff.delay(afterFailures: 500, initial: .milliseconds(500), max: .seconds(60)) == .seconds(60))
    }

    @Test func aSignatureVerifiesOnlyItsBodyAndTime() {
        let body = Data(#"{"webhook":"notify","changes":[],"cursor":"c"}"#.utf8)
        let header = WebhookSignature.header(body: body, secret: "secret-0123456789", time: 1_000)
        #expect(header.hasPrefix("t=1000,v1="))
        #expect(WebhookSignature.verify(header: header, body: body, secret: "secret-0123456789", now: 1_100, tolerance: 300))
        #expect(!WebhookSignature.verify(header: header, body: body + Data(" ".utf8), secret: "secret-0123456789", now: 1_100, tolerance: 300))
        #expect(!WebhookSignature.verify(header: header, body: body, secret: "another-secret-0123", now: 1_100, tolerance: 300))
        #expect(!WebhookSignature.verify(header: header, body: body, secret: "secret-0123456789", now: 2_000, tolerance: 300))
        #expect(!WebhookSignature.verify(header: header.replacingOccurrences(of: "t=1000", with: "t=1100"), body: body, secret: "secret-0123456789", now: 1_100, tolerance: 300))
    }

    @Test func theAdminCredentialIsLongAndComparedWhole() throws {
        #expect(throws: FerryServerError.self) { try AdminConfiguration(port: 0, token: "short") }
        #expect(throws: FerryServerError.self) { try AdminConfiguration(port: 0, token: String(repeating: "a", count: 20) + " " + String(repeating: "b", count: 20)) }
        let token = String(repeating: "x", count: 40)
        #expect(try AdminConfiguration(port: 0, token: token).host == "127.0.0.1")
        #expect(AdminAuthMiddleware.same(token, token))
        #expect(!AdminAuthMiddleware.same(token + "x", token) && !AdminAuthMiddleware.same(String(token.dropLast()), token))
        // A webhook posts over https, or http on this machine only; its name and secret are checked.
        #expect(throws: FerryServerError.self) { try WebhookConfiguration(name: "n", url: URL(string: "http://example.com/h")!, secret: "0123456789abcdef") }
        #expect(throws: FerryServerError.self) { try WebhookConfiguration(name: "bad name", url: URL(string: "https://example.com/h")!, secret: "0123456789abcdef") }
        #expect(throws: FerryServerError.self) { try WebhookConfiguration(name: "n", url: URL(string: "https://example.com/h")!, secret: "short") }
        #expect(throws: Never.self) { try WebhookConfiguration(name: "n", url: URL(string: "http://127.0.0.1:9/h")!, secret: "0123456789abcdef") }
    }

    @Test func aDoorbellKeepsARingAndEndsWhenClosed() async {
        let bell = Doorbell()
        bell.ring()
        let start = ContinuousClock.now
        #expect(await bell.wait(upTo: .seconds(10)))
        #expect(ContinuousClock.now - start < .seconds(5), "a ring before the wait ends it at once")
        let waiting = Task { await bell.wait(upTo: .seconds(30)) }
        try? await Task.sleep(for: .milliseconds(50))
        let rung = ContinuousClock.now
        bell.ring()
        #expect(await waiting.value)
        #expect(ContinuousClock.now - rung < .seconds(5), "a ring ends a wait at once, not at its timeout")
        bell.close()
        #expect(await bell.wait(upTo: .seconds(30)) == false)
    }
}
