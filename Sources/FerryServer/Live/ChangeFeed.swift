import NIOConcurrencyHelpers

/// Tells live subscribers that scopes changed.
///
/// A store publishes the scopes of every committed push; each subscriber
/// hears of the scopes it follows. The SQLite store publishes after its own
/// commits; a store shared by many instances publishes what its database
/// notifies.
///
/// ```swift
/// let subscription = feed.subscribe(to: ["user:alice"])
/// for await scopes in subscription.changes { print("news in", scopes) }
/// ```
public final class ChangeFeed: Sendable {
    /// One subscriber's stream of changed scopes.
    public struct Subscription: Sendable {
        public let changes: AsyncStream<Set<String>>
    }

    private struct Subscriber {
        /// `nil`: every scope (the admin change feed, webhooks).
        var scopes: Set<String>?
        var continuation: AsyncStream<Set<String>>.Continuation
    }

    private struct State {
        var nextID = 0
        var subscribers: [Int: Subscriber] = [:]
        /// Who follows each scope; `everything`, who follows every scope.
        var followers: [String: Set<Int>] = [:]
        var everything: Set<Int> = []
        /// The last publish that named each followed scope, and the last to
        /// every scope, numbered from one counter that never repeats.
        var lastPublish = 0
        var published: [String: Int] = [:]
        var publishedToAll = 0
        var closed = false

        mutating func remove(_ id: Int) {
            guard let subscriber = subscribers.removeValue(forKey: id) else { return }
            guard let scopes = subscriber.scopes else {
                everything.remove(id)
                return
            }
            for scope in scopes {
                followers[scope]?.remove(id)
                if followers[scope]?.isEmpty == true {
                    followers[scope] = nil
                    published[scope] = nil
                }
            }
        }
    }

    private let state = NIOLockedValueBox(State())

    public init() {}

    /// Starts following `scopes`, or with `nil` every scope. The stream
    /// ends when the feed closes.
    public func subscribe(to scopes: Set<String>?) -> Subscription {
        // Only the latest news matters: a subscriber that lags pulls once.
        let (stream, continuation) = AsyncStream.makeStream(of: Set<String>.self, bufferingPolicy: .bufferingNewest(16))
        let id: Int? = state.withLockedValue { state in
            guard !state.closed else { return nil }
            defer { state.nextID += 1 }
            let id = state.nextID
            state.subscribers[id] = Subscriber(scopes: scopes, continuation: continuation)
            if let scopes {
                for scope in scopes { state.followers[scope, default: []].insert(id) }
            } else {
                state.everything.insert(id)
            }
            return id
        }
        guard let id else {
            continuation.finish()
            return Subscription(changes: stream)
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLockedValue { $0.remove(id) }
        }
        return Subscription(changes: stream)
    }

    /// Tells every subscriber following any of `scopes`.
    public func publish(_ scopes: Set<String>) {
        guard !scopes.isEmpty else { return }
        let deliveries = state.withLockedValue { state in
            // Only the followers of these scopes are visited: a write costs its readers, not every stream.
            var news: [Int: Set<String>] = [:]
            for scope in scopes {
                guard let followers = state.followers[scope] else { continue }
                state.lastPublish += 1
                state.published[scope] = state.lastPublish
                for id in followers { news[id, default: []].insert(scope) }
            }
            var deliveries = news.compactMap { id, news in state.subscribers[id].map { ($0.continuation, news) } }
            for id in state.everything {
                if let subscriber = state.subscribers[id] { deliveries.append((subscriber.continuation, scopes)) }
            }
            return deliveries
        }
        for (continuation, news) in deliveries {
            continuation.yield(news)
        }
    }

    /// The number of the last publish that named `scope` (or every scope),
    /// read by a subscriber handling news of it: any work on the scope begun
    /// after that number was read sees every change published by then.
    /// Numbers only grow and never repeat while the feed lives.
    ///
    /// ```swift
    /// let seen = feed.lastPublish(of: "team@alice")   // read after the news arrived
    /// ```
    public func lastPublish(of scope: String) -> Int {
        state.withLockedValue { max($0.published[scope] ?? 0, $0.publishedToAll) }
    }

    /// Tells every subscriber that all its scopes may have changed: after
    /// news could have been missed (a lost database connection).
    public func publishToAll() {
        let deliveries = state.withLockedValue { state in
            state.lastPublish += 1
            state.publishedToAll = state.lastPublish
            return state.subscribers.values.map { ($0.continuation, $0.scopes) }
        }
        for (continuation, scopes) in deliveries where scopes?.isEmpty != true {
            continuation.yield(scopes ?? [])
        }
    }

    /// The number of open subscriptions.
    public var subscriberCount: Int {
        state.withLockedValue { $0.subscribers.count }
    }

    /// Ends every subscription and refuses new ones: live requests finish so
    /// a graceful shutdown is not held up by them.
    public func close() {
        let continuations = state.withLockedValue { state in
            state.closed = true
            defer {
                state.subscribers = [:]
                state.followers = [:]
                state.everything = []
            }
            return state.subscribers.values.map(\.continuation)
        }
        for continuation in continuations {
            continuation.finish()
        }
    }
}
