@testable import Ferry
import FerryProtocol
import Foundation
import Testing

/// The pure decisions of the engine, no socket or file.
@Suite struct SyncDecisionTests {
    @Test func backoffGrowsIsCappedAndHonoursRetryAfter() {
        let policy = RetryPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(2), multiplier: 2)
        #expect(policy.delay(attempt: 0, unit: 0.999) <= .milliseconds(100))
        #expect(policy.delay(attempt: 3, unit: 0.999) <= .milliseconds(800))
        #expect(policy.delay(attempt: 3, unit: 0.999) > .milliseconds(700))
        #expect(policy.delay(attempt: 40, unit: 0.999) <= .seconds(2))
        #expect(policy.delay(attempt: 5, unit: 0) == .zero)
        #expect(policy.delay(attempt: 0, retryAfter: .seconds(7), unit: 0.5) == .seconds(7))
    }

    @Test func failuresAreClassified() {
        #expect(SyncFailure(SyncTransportError.unreachable("refused")) == .transient(retryAfter: nil))
        #expect(SyncFailure(SyncTransportError.timedOut) == .transient(retryAfter: nil))
        #expect(SyncFailure(SyncTransportError.http(status: 503, error: nil, retryAfter: nil)) == .transient(retryAfter: nil))
        #expect(SyncFailure(SyncTransportError.http(status: 429, error: nil, retryAfter: .seconds(3))) == .transient(retryAfter: .seconds(3)))
        #expect(SyncFailure(SyncTransportError.http(status: 401, error: nil, retryAfter: nil)) == .unauthorized)
        let gap = ErrorResponse(code: .mutationGap, message: "gap", lastAppliedMutationID: 4)
        #expect(SyncFailure(SyncTransportError.http(status: 409, error: gap, retryAfter: nil)) == .gap(lastApplied: 4))
        let bad = ErrorResponse(code: .badRequest, message: "no")
        #expect(SyncFailure(SyncTransportError.http(status: 400, error: bad, retryAfter: nil)) == .refused(status: 400, message: "no"))
        struct Other: Error {}
        #expect(SyncFailure(Other()) == .fatal)
    }

    @Test func liveEventsBecomeMessages() {
        typealias Event = EventStreamParser.Event
        #expect(LiveMessage(Event(name: "ready", data: #"{"scopes":["a"]}"#), following: ["a"]) == .ready)
        #expect(LiveMessage(Event(name: "change", data: #"{"scopes":["b"]}"#), following: ["a", "b"]) == .change(scopes: ["b"]))
        let page = #"{"changes":[{"deleted":false,"rowID":"r1","table":"note","values":{"title":"x"},"version":3}],"cursor":"c","hasMore":false,"reset":false,"scope":"a"}"#
        #expect(
            LiveMessage(Event(name: "page", data: page), following: ["a"])
                == .page(
                    PullPage(
                        scope: "a", changes: [RowChange(table: "note", rowID: "r1", version: 3, deleted: false, values: ["title": "x"])],
                        cursor: "c", hasMore: false, reset: false)))
        // Rows this client cannot read are news all the same; an unknown event is none.
        #expect(LiveMessage(Event(name: "page", data: "{garbled"), following: ["a"]) == .change(scopes: ["a"]))
        #expect(LiveMessage(Event(name: "someday", data: "{}"), following: ["a"]) == nil)
    }

    @Test func eventStreamParsesEventsSplitAnywhere() {
        let text = ": heartbeat\r\n\r\nevent: ready\ndata: {\"scopes\":[\"a\"]}\n\nevent: change\rdata: x\rdata: y\r\r"
        let bytes = Array(text.utf8)
        for split in [1, 2, 3, 7, bytes.count] {
            var parser = EventStreamParser()
            var events: [EventStreamParser.Event] = []
            var index = 0
            while index < bytes.count {
                events += parser.feed(bytes[index..<min(index + split, bytes.count)])
                index += split
            }
            #expect(events == [.init(name: "ready", data: "{\"scopes\":[\"a\"]}"), .init(name: "change", data: "x\ny")])
        }
    }

    private func change(deleted: Bool = false, version: Int64 = 5) -> RowChange {
        RowChange(
            table: "note", rowID: "1", version: version, deleted: deleted,
            values: ["id": "1", "title": "server", "body": "server body", "extra": "new column"])
    }

    @Test func rebaseKeepsPendingColumnsAndTakesTheRest() {
        let columns = ["id", "title", "body"]
        #expect(
            RowRebase.plan(change(), pending: .none, knownVersion: 3, columns: columns, primaryKey: "id")
                == .write(["title": "server", "body": "server body"]))
        #expect(
            RowRebase.plan(change(), pending: .columns(["title"]), knownVersion: 3, columns: columns, primaryKey: "id")
                == .write(["body": "server body"]))
        #expect(
            RowRebase.plan(change(), pending: .allColumns, knownVersion: nil, columns: columns, primaryKey: "id")
                == .keep(recordVersion: true))
        #expect(
            RowRebase.plan(change(), pending: .deleted, knownVersion: 3, columns: columns, primaryKey: "id")
                == .keep(recordVersion: true))
        #expect(
            RowRebase.plan(change(version: 2), pending: .none, knownVersion: 3, columns: columns, primaryKey: "id")
                == .keep(recordVersion: false))
        #expect(RowRebase.plan(change(deleted: true), pending: .none, knownVersion: 3, columns: columns, primaryKey: "id") == .delete)
        #expect(
            RowRebase.plan(change(deleted: true), pending: .columns(["body"]), knownVersion: 3, columns: columns, primaryKey: "id")
                == .keep(recordVersion: true))
    }

    @Test func pendingEditsFold() {
        #expect(RowRebase.pending([]) == .none)
        #expect(RowRebase.pending([(.update, ["a"]), (.update, ["b"])]) == .columns(["a", "b"]))
        #expect(RowRebase.pending([(.insert, nil), (.update, ["b"])]) == .allColumns)
        #expect(RowRebase.pending([(.update, ["a"]), (.delete, nil)]) == .deleted)
        #expect(RowRebase.pending([(.delete, nil), (.update, ["a"])]) == .allColumns)
    }
    @Test func retryAfterReadsSecondsAndHTTPDates() {
        let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(RetryAfter.delay("120", now: now) == .seconds(120))
        #expect(RetryAfter.delay(" 0 ", now: now) == .zero)
        #expect(RetryAfter.delay("Sun, 06 Nov 1994 08:50:07 GMT", now: now) == .seconds(30))
        #expect(RetryAfter.delay("Sunday, 06-Nov-94 08:49:47 GMT", now: now) == .seconds(10))
        #expect(RetryAfter.delay("Sun Nov  6 08:49:57 1994", now: now) == .seconds(20))
        #expect(RetryAfter.delay("Sun, 06 Nov 1994 08:00:00 GMT", now: now) == .zero, "a date in the past means now")
        for bad in ["-5", "soon", "", "1.5"] {
            #expect(RetryAfter.delay(bad, now: now) == nil)
        }
    }

    private func conflict(_ kind: Conflict.Kind, mine: ColumnValue?, theirs: ColumnValue?, local: [String: ColumnValue]? = nil) -> SyncConflict {
        SyncConflict(
            id: 1, table: "task", rowID: "t1", scope: "user:alice", kind: kind, column: "title", base: "old", mine: mine, theirs: theirs,
            resolution: .keptServer, mutationID: 0, detectedAt: Date(), overriddenBy: "bob",
            serverRow: ServerRow(version: 9, deleted: kind == .updateLostToDelete, values: ["title": "server", "owner": "olga", "done": 0]),
            serverVersion: 9, rowValues: local)
    }

    @Test func everyChoiceOfEveryKindHasAWholeRowToWrite() {
        let fill: [String: ColumnValue] = ["title": "server", "owner": "olga", "done": 0]
        #expect(
            ConflictResolution.plan(for: conflict(.column, mine: "mine", theirs: "server"), choice: .mine)
                == .write(set: ["title": "mine"], fill: fill))
        #expect(
            ConflictResolution.plan(for: conflict(.column, mine: "mine", theirs: "server"), choice: .theirs)
                == .write(set: ["title": "server"], fill: fill))
        // An update lost to a delete: the device's own snapshot of the row lies over the server's last values.
        let lost = conflict(.updateLostToDelete, mine: "mine", theirs: nil, local: ["title": "mine", "done": 1])
        #expect(
            ConflictResolution.plan(for: lost, choice: .mine)
                == .write(set: ["title": "mine"], fill: ["title": "mine", "owner": "olga", "done": 1]))
        #expect(ConflictResolution.plan(for: lost, choice: .theirs) == .delete)
        #expect(
            ConflictResolution.plan(for: lost, choice: .merged(["done": 2]))
                == .write(set: ["done": 2], fill: ["title": "mine", "owner": "olga", "done": 1]))
        let overrode = conflict(.deleteOverrodeUpdate, mine: nil, theirs: "server")
        #expect(ConflictResolution.plan(for: overrode, choice: .mine) == .delete)
        #expect(ConflictResolution.plan(for: overrode, choice: .theirs) == .write(set: ["title": "server"], fill: fill))
    }
}
