import FerryProtocol
import Foundation
import Hummingbird
import NIOCore
import ServiceLifecycle

/// `GET /v1/live?scope=…`: server-sent events telling a client that a
/// followed scope has news, so it pulls at once instead of polling.
extension SyncAPI {
    private enum Event: Sendable {
        case change(Set<String>)
        case heartbeat
    }

    func live(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let userID = try context.requireUser()
        let scopes = request.uri.queryParameters.getAll("scope")
        try checkFollowed(scopes)
        for scope in scopes {
            try await require(.read, in: scope, for: userID)
        }
        guard let ticket = liveStreams.take(for: userID) else {
            throw FerryServerError(.tooManyRequests, "you already hold \(liveStreams.perUser) live streams, the most one user may; close one first")
        }
        // Subscribed before the response starts: a change committed after
        // the client reads `ready` is never missed.
        let subscription = store.changeFeed.subscribe(to: Set(scopes))
        let connection = context.channel
        let heartbeat = configuration.liveHeartbeat
        let metrics = self.metrics
        let feed = store.changeFeed
        metrics.recordLiveSubscribers(feed.subscriberCount)
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
            body: ResponseBody { writer in
                defer {
                    ticket.release()
                    metrics.recordLiveSubscribers(feed.subscriberCount)
                }
                let (events, continuation) = AsyncStream.makeStream(of: Event.self)
                // The client went away: end the stream now, not at the next heartbeat's failed write.
                connection.closeFuture.whenComplete { _ in continuation.finish() }
                connection.pipeline.handler(type: RawBytesWatcher.self).whenSuccess { watcher in
                    watcher.whenInputClosed { continuation.finish() }
                }
                try await writer.write(Self.event(.ready, scopes: scopes))
                try await withGracefulShutdownHandler {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await news in subscription.changes {
                                continuation.yield(.change(news))
                            }
                            continuation.finish()
                        }
                        group.addTask {
                            while !Task.isCancelled {
                                try await Task.sleep(for: heartbeat)
                                continuation.yield(.heartbeat)
                            }
                        }
                        for await event in events {
                            switch event {
                            case .change(let news):
                                try await writer.write(Self.event(.change, scopes: news.sorted()))
                            case .heartbeat:
                                try await writer.write(ByteBuffer(string: ": heartbeat\n\n"))
                            }
                        }
                        group.cancelAll()
                    }
                } onGracefulShutdown: {
                    continuation.finish()
                }
                try await writer.finish(nil)
            }
        )
    }

    private static func event(_ name: LiveEvent.Name, scopes: [String]) -> ByteBuffer {
        let data = (try? JSONEncoder().encode(LiveEvent(scopes: scopes))) ?? Data("{}".utf8)
        return ByteBuffer(string: "event: \(name.rawValue)\ndata: \(String(decoding: data, as: UTF8.self))\n\n")
    }
}
