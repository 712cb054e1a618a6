import FerryProtocol
import Foundation
import Hummingbird
import NIOCore
import ServiceLifecycle

/// `GET /v1/live?scope=…`: server-sent events telling a client that a
/// followed scope has news, so it pulls at once instead of polling. With
/// `rows=true`, a small change comes as the rows themselves (`event: page`).
/// The stream ends with `expired` when its token does, and with `revoked`
/// when the user can no longer read a scope it follows.
extension SyncAPI {
    /// The most rows a live `page` event carries; a bigger change is a `change`.
    static let livePageRows = 100

    private enum Event: Sendable {
        case change(Set<String>)
        case heartbeat
        case expired
    }

    func live(_ request: Request, context: FerryRequestContext) async throws -> Response {
        let userID = try context.requireUser()
        let scopes = request.uri.queryParameters.getAll("scope")
        try checkFollowed(scopes)
        let rowsAsked = request.uri.queryParameters.getAll("rows")
        guard rowsAsked.count <= 1, rowsAsked.allSatisfy({ $0 == "true" || $0 == "false" }) else {
            throw FerryServerError(.badRequest, "rows must be given once, as true or false")
        }
        let sendsRows = rowsAsked.first == "true"
        let grants = context.tokenGrants
        for scope in scopes {
            try await require(.read, in: scope, for: userID, grants: grants)
        }
        // The token's life bounds the stream: it ends when the token expires.
        let lifetime = context.tokenExpires.map { Duration.seconds($0.timeIntervalSince(configuration.now())) }
        if let lifetime, lifetime <= .zero {
            throw FerryServerError(.unauthorized, "the token has expired; get a new one")
        }
        guard let ticket = liveStreams.take(for: userID) else {
            throw FerryServerError(.tooManyRequests, "you already hold \(liveStreams.perUser) live streams, the most one user may; close one first")
        }
        // Subscribed before the response starts: a change committed after
        // the client reads `ready` is never missed.
        let subscription = store.changeFeed.subscribe(to: Set(scopes))
        // Pages start where a pull can read now, after the subscription: a
        // change committed in between is announced and found by its page.
        let startCursors = sendsRows ? try await store.endCursors(scopes: scopes) : [:]
        let api = self
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
                var cursors = startCursors
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
                        if let lifetime {
                            group.addTask {
                                try await Task.sleep(for: lifetime)
                                continuation.yield(.expired)
                            }
                        }
                        events: for await event in events {
                            // The user's access bounds the stream too: checked at every news and heartbeat.
                            if case .change(let news) = event, sendsRows {
                                for scope in news.sorted() {
                                    // Access is checked against the readers read after the page: rows committed
                                    // before the user left the scope, never after.
                                    let page = await api.liveEvent(scope, after: cursors[scope], feed: feed)
                                    switch await api.access(to: scope, userID: userID, grants: grants, readers: page.readers) {
                                    case .lost:
                                        try await writer.write(Self.event(.revoked, scopes: [scope]))
                                        break events
                                    case .readable:
                                        cursors[scope] = page.cursor
                                        try await writer.write(page.bytes)
                                    case .unknown:
                                        // The store could not say: news only, and the pull checks.
                                        let news = await Self.changeEvent(scope, after: cursors[scope], store: api.store)
                                        cursors[scope] = news.cursor
                                        try await writer.write(news.bytes)
                                    }
                                }
                                continue events
                            }
                            let checked: [String] =
                                switch event {
                                case .change(let news): news.sorted()
                                case .heartbeat: scopes
                                case .expired: []
                                }
                            for scope in checked {
                                if await api.access(to: scope, userID: userID, grants: grants, readers: nil) == .lost {
                                    try await writer.write(Self.event(.revoked, scopes: [scope]))
                                    break events
                                }
                            }
                            switch event {
                            case .change(let news):
                                try await writer.write(Self.event(.change, scopes: news.sorted()))
                            case .heartbeat:
                                try await writer.write(ByteBuffer(string: ": heartbeat\n\n"))
                            case .expired:
                                // Nothing more under this token, not even news already queued.
                                try await writer.write(Self.event(.expired, scopes: scopes))
                                break events
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

    private enum LiveAccess { case readable, lost, unknown }

    /// Whether the user may still read `scope` (removed from a shared scope
    /// since the stream opened?): from `readers` when a shared page brought
    /// them, else from the store. A store that cannot answer now is not
    /// taken for a refusal.
    private func access(to scope: String, userID: String, grants: [String: ScopeRole], readers: ScopeReaders?) async -> LiveAccess {
        if let readers, ScopeName.owner(of: scope) == nil {
            let role = ScopeAccess.role(of: userID, in: scope, membership: readers.membership(of: userID), granted: grants[scope])
            return role == nil ? .lost : .readable
        }
        do {
            try await require(.read, in: scope, for: userID, grants: grants)
            return .readable
        } catch let error as FerryServerError where error.code == .forbidden {
            return .lost
        } catch {
            return .unknown
        }
    }

    /// The event for news in `scope`: the rows after `cursor` as a `page`
    /// when they are few, else a `change` (the client pulls), where the
    /// next page starts, and the scope's readers read after the rows. Built
    /// once for every stream at `cursor` that heard the same news
    /// (``LivePages``): the rows do not depend on who reads them, and each
    /// stream checks its user against the readers before it writes.
    private func liveEvent(_ scope: String, after cursor: String?, feed: ChangeFeed) async -> LivePages.Event {
        let store = self.store
        let shared = ScopeName.owner(of: scope) == nil
        guard let cursor else {
            var news = await Self.changeEvent(scope, after: cursor, store: store)
            news.readers = shared ? try? await store.readers(of: scope) : nil
            return news
        }
        let key = LivePages.Key(scope: scope, after: cursor, publish: feed.lastPublish(of: scope))
        let (event, wasShared) = await livePages.event(key) {
            var event = await Self.pageEvent(scope, after: cursor, store: store)
            // After the rows: a user still a reader now was one when each row committed.
            event.readers = shared ? try? await store.readers(of: scope) : nil
            return event
        }
        metrics.recordLivePage(shared: wasShared)
        return event
    }

    /// The rows after `cursor` as a `page` event, or news of a change when
    /// there are too many or none readable yet.
    private static func pageEvent(_ scope: String, after cursor: String, store: any SyncStore) async -> LivePages.Event {
        do {
            let answer = try await store.pullEncoded(
                PullRequest(clientID: "live", scopes: [.init(scope: scope, cursor: cursor)]),
                userID: "live", limit: Self.livePageRows, notices: false
            )
            if var page = answer.pages.first, !page.rows.isEmpty, !page.hasMore, !page.reset {
                page.notices = []
                page.noticeCursor = nil
                // Every change after `cursor` up to the page's: a client at `cursor` may move to it.
                page.after = cursor
                var bytes = ByteBuffer()
                bytes.reserveCapacity(page.byteEstimate + 32)
                bytes.writeString("event: \(LiveEvent.Name.page.rawValue)\ndata: ")
                try page.write(to: &bytes)
                bytes.writeStaticString("\n\n")
                return LivePages.Event(bytes: bytes, cursor: page.cursor)
            }
        } catch {
            // No rows, then: the client pulls, and hears of a refusal there.
        }
        return await changeEvent(scope, after: cursor, store: store)
    }

    /// News of `scope` without its rows (too many, none readable yet, or no
    /// cursor): the client pulls; the next page starts at the end.
    private static func changeEvent(_ scope: String, after cursor: String?, store: any SyncStore) async -> LivePages.Event {
        let end = try? await store.endCursors(scopes: [scope])[scope]
        return LivePages.Event(bytes: event(.change, scopes: [scope]), cursor: end ?? cursor)
    }

    private static func event(_ name: LiveEvent.Name, scopes: [String]) -> ByteBuffer {
        let data = (try? JSONEncoder().encode(LiveEvent(scopes: scopes))) ?? Data("{}".utf8)
        return ByteBuffer(string: "event: \(name.rawValue)\ndata: \(String(decoding: data, as: UTF8.self))\n\n")
    }
}
