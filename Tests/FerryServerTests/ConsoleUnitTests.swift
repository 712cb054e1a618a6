@testable import FerryServer
import FerryProtocol
import Foundation
import Testing

/// The console's decisions without a socket: sessions, escaping, forms,
/// the activity window and the row timeline.
struct ConsoleUnitTests {
    @Test func aSessionEndsWhenIdleOrTooOldAndAtClose() {
        var table = ConsoleSessionTable(idleTimeout: 1000)
        table.maxLifetime = 5000
        let session = table.open(now: 0)
        #expect(session.id != session.csrf && session.id.count >= 43)
        #expect(table.touch(session.id, now: 900)?.csrf == session.csrf)
        // Each request restarts the idle time, up to the lifetime.
        for now in stride(from: 1800, through: 4800, by: 900) { #expect(table.touch(session.id, now: Int64(now)) != nil) }
        #expect(table.touch(session.id, now: 5000) == nil, "past its lifetime")
        #expect(table.touch(session.id, now: 5001) == nil, "and forgotten")

        let idle = table.open(now: 10_000)
        #expect(table.isOpen(idle.id, now: 10_999))
        #expect(table.isOpen(idle.id, now: 10_999), "looking does not restart the idle time")
        #expect(!table.isOpen(idle.id, now: 11_000))
        #expect(table.touch(idle.id, now: 11_000) == nil)

        let closed = table.open(now: 20_000)
        table.close(closed.id)
        #expect(table.touch(closed.id, now: 20_001) == nil)
        #expect(table.touch("made-up", now: 20_001) == nil)
    }

    @Test func theOldestSessionGoesAtCapacity() {
        var table = ConsoleSessionTable(idleTimeout: 60_000)
        table.capacity = 2
        let first = table.open(now: 0), second = table.open(now: 1)
        _ = table.touch(first.id, now: 2)
        _ = table.open(now: 3)
        #expect(table.touch(first.id, now: 4) != nil && table.touch(second.id, now: 4) == nil)
    }

    @Test func wrongTokensFromOneAddressAreThrottledUntilTheOldestAgesOut() {
        var throttle = ConsoleSignInThrottle()
        for second in 0..<5 {
            #expect(throttle.wait(for: "10.0.0.7", now: Int64(second) * 1000) == 0)
            throttle.failed("10.0.0.7", now: Int64(second) * 1000)
        }
        // The sixth try waits until the first wrong token is a minute old.
        #expect(throttle.wait(for: "10.0.0.7", now: 5000) == 55_000)
        #expect(throttle.wait(for: "10.0.0.8", now: 5000) == 0, "another address is not held back")
        #expect(throttle.wait(for: "10.0.0.7", now: 60_000) == 0)
        throttle.failed("10.0.0.7", now: 60_000)
        #expect(throttle.wait(for: "10.0.0.7", now: 60_000) == 1000, "the window slides: the second wrong token ages out next")
        throttle.succeeded("10.0.0.7")
        #expect(throttle.wait(for: "10.0.0.7", now: 60_000) == 0, "a right token clears the count")
    }

    @Test func theThrottleRemembersAtMostItsCapacity() {
        var throttle = ConsoleSignInThrottle()
        throttle.capacity = 2
        for _ in 0..<5 { throttle.failed("a", now: 0) }
        for _ in 0..<5 { throttle.failed("b", now: 1) }
        for _ in 0..<5 { throttle.failed("c", now: 2) }
        #expect(throttle.wait(for: "a", now: 3) == 0, "the stalest address was forgotten")
        #expect(throttle.wait(for: "b", now: 3) > 0 && throttle.wait(for: "c", now: 3) > 0)
    }

    @Test func interpolatedTextIsEscapedAndMarkupIsKept() {
        let value = #"<b onclick="x">&'"#
        let cell: ConsoleHTML = "<td>\(value)</td>"
        #expect(cell.markup == "<td>&lt;b onclick=&quot;x&quot;&gt;&amp;&#39;</td>")
        let row: ConsoleHTML = "<tr>\(cell)</tr>"
        #expect(row.markup == "<tr>" + cell.markup + "</tr>")
        let missing: String? = nil
        #expect(ConsoleHTML("<p>\(missing)</p>").markup == "<p></p>")
        #expect(ConsoleHTML.component("trip@alice/ x") == "trip%40alice%2F%20x")
        #expect(ConsoleHTML.bytes(1536) == "1.5 KiB" && ConsoleHTML.bytes(12) == "12 bytes" && ConsoleHTML.bytes(nil) == "—")
        #expect(ConsoleHTML.time(0) == "1970-01-01 00:00:00 UTC")
    }

    @Test func aFormDecodesPlusAndPercentAndKeepsTheFirstValue() {
        let form = ConsoleForm("csrf=abc&user=bob+smith&user=eve&note=50%25%20off&empty=&flag&bad=%zz")
        #expect(form["csrf"] == "abc" && form["user"] == "bob smith" && form["note"] == "50% off")
        #expect(form["empty"] == "" && form["flag"] == "" && form["bad"] == "" && form["missing"] == nil)
    }

    @Test func theActivityWindowCountsPushesAndPullsAndQuantiles() {
        var window = ActivityWindow()
        for index in 1...100 { window.record(route: "/v1/push", status: 200, milliseconds: Double(index), at: 5_000) }
        window.record(route: "/v1/pull", status: 200, milliseconds: 3, at: 12_000)
        window.record(route: "/v1/pull", status: 503, milliseconds: 9, at: 12_500)
        window.record(route: "/healthz", status: 404, milliseconds: 1, at: 12_500)
        let pushes = window.series(.push, now: 12_600), pulls = window.series(.pull, now: 12_600)
        #expect(pushes.count == ActivityWindow.buckets && pushes.last?.start == 10_000)
        #expect(pushes[pushes.count - 2] == ActivityWindow.Point(start: 0, perSecond: 10, p50: 50, p99: 99))
        #expect(pulls.last == ActivityWindow.Point(start: 10_000, perSecond: 0.2, p50: 3, p99: 9))
        #expect(window.errors(now: 12_600) == [503: 1, 404: 1])
        // Five minutes on, every bucket has aged out.
        #expect(window.errors(now: 12_600 + 300_000).isEmpty)
        #expect(window.series(.push, now: 12_600 + 300_000).allSatisfy { $0.perSecond == 0 && $0.p50 == nil })
        #expect(ActivityWindow.quantile([], 0.5) == nil && ActivityWindow.quantile([7], 0.99) == 7)
    }

    @Test func theTimelineRunsByVersionWithUnversionedEventsLast() {
        let conflict = Conflict(kind: .column, column: "title", base: .text("a"), local: .text("b"), server: .text("c"), resolution: .keptServer)
        let story = RowInspection(
            scope: "user:alice", table: "note", rowID: "n1",
            current: InspectedRow(
                version: 3, deleted: false, collected: false, clientID: "p", changedAt: 30,
                cells: [InspectedCell(column: "title", value: .text("c"), version: 3, wallMilliseconds: 30, clientID: "p")]),
            history: [InspectedValue(column: "title", version: 1, value: .text("a"), clientID: "alice:p", writtenAt: 10)],
            conflicts: [InspectedConflict(userID: "alice", clientID: "l", mutationID: 4, scope: "user:alice", table: "note", rowID: "n1", version: 3, conflict: conflict, createdAt: 40)],
            notices: [],
            rejections: [InspectedRejection(userID: "bob", clientID: "b", mutationID: 1, scope: "user:alice", table: "note", rowID: "n1", reason: "no access", createdAt: 5)])
        #expect(story.timeline.map(\.kind) == [.overwritten, .current, .conflict, .rejection])
        #expect(story.timeline[2].summary == "`title`: sent \"b\", server held \"c\"; kept the server's value")
    }

    /// Every text and background colour the stylesheet pairs meets WCAG AA
    /// for normal text (4.5:1), computed from the stylesheet itself.
    @Test func theStylesheetsColoursHaveEnoughContrast() throws {
        let css = ConsoleAssets.css
        func variable(_ name: String) throws -> String {
            let range = try #require(css.range(of: "--\(name): "))
            return String(css[range.upperBound...].prefix { $0 != ";" })
        }
        func luminance(_ hex: String) throws -> Double {
            var digits = String(hex.dropFirst())
            if digits.count == 3 { digits = digits.map { "\($0)\($0)" }.joined() }
            let value = try #require(UInt32(digits, radix: 16))
            return [16, 8, 0].map { shift -> Double in
                let channel = Double((value >> UInt32(shift)) & 0xFF) / 255
                return channel <= 0.03928 ? channel / 12.92 : pow((channel + 0.055) / 1.055, 2.4)
            }.enumerated().map { [0.2126, 0.7152, 0.0722][$0.offset] * $0.element }.reduce(0, +)
        }
        func contrast(_ a: String, _ b: String) throws -> Double {
            let (x, y) = (try luminance(a), try luminance(b))
            return (max(x, y) + 0.05) / (min(x, y) + 0.05)
        }
        let (ink, muted, accent, bad, background, band) = (
            try variable("ink"), try variable("muted"), try variable("accent"), try variable("bad"), try variable("bg"), try variable("band")
        )
        // Text on the page, on bands (headers, facts), on the notice and timeline highlights; button text on its colour.
        let pairs = [
            (ink, background), (ink, band), (muted, background), (muted, band), (accent, background), (accent, band), (bad, background),
            ("#fff", accent), ("#fff", bad), (ink, "#e7f1fb"), (ink, "#fff4e5"), (ink, "#fdecee"), (accent, "#e7f1fb"),
        ]
        for (text, back) in pairs {
            let ratio = try contrast(text, back)
            #expect(ratio >= 4.5, "\(text) on \(back): \(ratio)")
        }
        for highlight in ["#e7f1fb", "#fff4e5", "#fdecee"] { #expect(css.contains(highlight), "\(highlight) is no longer in the stylesheet") }
    }
}
