import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import FerryServer

/// One live event per scope change, shared only by streams at the same
/// cursor that heard the same news; and the feed's publish numbers.
@Suite struct LivePagesTests {
    private static func building(_ builds: NIOLockedValueBox<Int>, _ text: String, wait: Duration = .zero) -> @Sendable () async -> LivePages.Event {
        {
            builds.withLockedValue { $0 += 1 }
            try? await Task.sleep(for: wait)
            return LivePages.Event(bytes: ByteBuffer(string: text), cursor: "end-\(text)")
        }
    }

    @Test func streamsAskingAtOnceShareOneBuild() async {
        let pages = LivePages()
        let builds = NIOLockedValueBox(0)
        let key = LivePages.Key(scope: "crew@alice", after: "c1", publish: 7)
        let answers = await withTaskGroup(of: (String, Bool).self) { group in
            for _ in 0..<100 {
                group.addTask {
                    let (event, shared) = await pages.event(key, build: Self.building(builds, "p7", wait: .milliseconds(50)))
                    return (String(buffer: event.bytes), shared)
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(builds.withLockedValue { $0 } == 1)
        #expect(answers.allSatisfy { $0.0 == "p7" })
        #expect(answers.filter(\.1).count == 99)
        #expect(pages.counts == (1, 99))
    }

    @Test func anotherCursorOrANewerPublishBuildsAgain() async {
        let pages = LivePages()
        let builds = NIOLockedValueBox(0)
        _ = await pages.event(.init(scope: "s", after: "c1", publish: 1), build: Self.building(builds, "a"))
        // Another cursor: its rows differ.
        let other = await pages.event(.init(scope: "s", after: "c0", publish: 1), build: Self.building(builds, "b"))
        #expect(String(buffer: other.event.bytes) == "b" && !other.shared)
        // Newer news at the same cursor: built after it, never the page built before it.
        let newer = await pages.event(.init(scope: "s", after: "c1", publish: 2), build: Self.building(builds, "c"))
        #expect(String(buffer: newer.event.bytes) == "c" && !newer.shared)
        // A stream still on older news builds for itself and does not displace the newer page.
        let late = await pages.event(.init(scope: "s", after: "c1", publish: 1), build: Self.building(builds, "d"))
        #expect(String(buffer: late.event.bytes) == "d" && !late.shared)
        let again = await pages.event(.init(scope: "s", after: "c1", publish: 2), build: Self.building(builds, "e"))
        #expect(String(buffer: again.event.bytes) == "c" && again.shared)
        // Another scope never shares.
        let scope = await pages.event(.init(scope: "t", after: "c1", publish: 2), build: Self.building(builds, "f"))
        #expect(String(buffer: scope.event.bytes) == "f" && !scope.shared)
        #expect(builds.withLockedValue { $0 } == 5)
    }

    @Test func eachPublishIsNumberedAfterEveryOtherAndOnlyForFollowedScopes() async {
        let feed = ChangeFeed()
        let a = feed.subscribe(to: ["a"])
        var news = a.changes.makeAsyncIterator()
        #expect(feed.lastPublish(of: "a") == 0)
        feed.publish(["a", "unfollowed"])
        let first = feed.lastPublish(of: "a")
        #expect(first > 0 && feed.lastPublish(of: "unfollowed") == 0)
        #expect(await news.next() == ["a"])
        feed.publish(["a"])
        #expect(feed.lastPublish(of: "a") > first)
        // Every scope at once (news that may have been missed) counts for each.
        feed.publishToAll()
        let all = feed.lastPublish(of: "a")
        #expect(all > first && feed.lastPublish(of: "b") == all)
        // A scope followed again later never reuses a number.
        let b = feed.subscribe(to: ["b"])
        feed.publish(["b"])
        #expect(feed.lastPublish(of: "b") > all)
        _ = b
    }

    /// Only a scope's followers hear of it; a subscription to every scope hears all.
    @Test func newsReachesOnlyTheScopesFollowers() async {
        let feed = ChangeFeed()
        let a = feed.subscribe(to: ["a", "b"])
        let c = feed.subscribe(to: ["c"])
        let everything = feed.subscribe(to: nil)
        feed.publish(["b", "z"])
        feed.publish(["c"])
        feed.close()
        #expect(await Array(a.changes) == [["b"]])
        #expect(await Array(c.changes) == [["c"]])
        #expect(await Array(everything.changes) == [["b", "z"], ["c"]])
    }
}

extension Array {
    fileprivate init(_ stream: AsyncStream<Element>) async {
        var all: [Element] = []
        for await element in stream { all.append(element) }
        self = all
    }
}
