import FerryProtocol
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle

/// `GET /admin/v1/changes`: the change feed, as a page or as a stream.
extension AdminAPI {
    private struct FeedQuery {
        var cursor: String?
        var scope: String?
        var table: String?
        var limit: Int
    }

    func changes(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let query = try AdminQuery(request, allowed: ["cursor", "scope", "table", "limit"])
        var feed = FeedQuery(
            cursor: try query.value("cursor", { !$0.isEmpty && $0.utf8.count <= 1024 }, "a cursor"),
            scope: try query.value("scope", ScopeName.isValid, "a scope name"),
            table: try query.value("table", MutationCheck.isIdentifier, "a table name"),
            limit: try query.limit())
        let streams = request.headers[.accept]?.contains("text/event-stream") ?? false
        guard streams else {
            let page = try await store.changes(after: feed.cursor, scope: feed.scope, table: feed.table, limit: feed.limit)
            return JSONResponse.make(page)
        }
        // A reconnecting EventSource resumes after the last event it got.
        if let last = request.headers[HTTPField.Name("Last-Event-ID")!], !last.isEmpty { feed.cursor = last }
        return try await stream(feed, connection: context.channel)
    }

    /// Pages as `changes` events, each with its cursor as the event id, read
    /// again whenever the store has news and at each heartbeat. Subscribed
    /// before the first read, so a change committed meanwhile is not missed;
    /// the first read happens before the response starts, so a bad cursor is
    /// a 400.
    private func stream(_ feed: FeedQuery, connection: any Channel) async throws -> Response {
        let subscription = store.changeFeed.subscribe(to: nil)
        let first = try await store.changes(after: feed.cursor, scope: feed.scope, table: feed.table, limit: feed.limit)
        let store = self.store
        let heartbeat = configuration.liveHeartbeat
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
            body: ResponseBody { writer in
                let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
                // The client went away: end now, not at the next failed write.
                connection.closeFuture.whenComplete { _ in wake.finish() }
                try await withGracefulShutdownHandler {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await _ in subscription.changes { wake.yield() }
                            wake.finish()
                        }
                        group.addTask {
                            while !Task.isCancelled {
                                try await Task.sleep(for: heartbeat)
                                wake.yield()
                            }
                        }
                        var page = first
                        var wakeups = wakes.makeAsyncIterator()
                        var lastWrite = ContinuousClock.now
                        while !Task.isShuttingDownGracefully {
                            if !page.changes.isEmpty {
                                try await writer.write(Self.event(page))
                                lastWrite = .now
                            }
                            if !page.hasMore {
                                guard await wakeups.next() != nil else { break }
                            }
                            // Whatever woke the stream: a filtered feed of a busy store may write nothing for long.
                            if ContinuousClock.now - lastWrite >= heartbeat {
                                try await writer.write(ByteBuffer(string: ": heartbeat\n\n"))
                                lastWrite = .now
                            }
                            page = try await store.changes(after: page.cursor, scope: feed.scope, table: feed.table, limit: feed.limit)
                        }
                        group.cancelAll()
                    }
                } onGracefulShutdown: {
                    wake.finish()
                }
                try await writer.finish(nil)
            })
    }

    private static func event(_ page: ChangeFeedPage) -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(page)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return ByteBuffer(string: "event: changes\nid: \(page.cursor)\ndata: \(data)\n\n")
    }
}
