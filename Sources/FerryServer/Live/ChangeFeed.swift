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
        var closed = false
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
            state.subscribers[state.nextID] = Subscriber(scopes: scopes, continuation: continuation)
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return Subscription(changes: stream)
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLockedValue { $0.subscribers.removeValue(forKey: id) }
        }
        return Subscription(changes: stream)
    }

    /// Tells every subscriber following any of `scopes`.
    public func publish(_ scopes: Set<String>) {
        guard !scopes.isEmpty else { return }
        let deliveries = state.withLockedValue { state in
            state.subscribers.values.compactMap { subscriber -> (AsyncStream<Set<String>>.Continuation, Set<String>)? in
                let news = subscriber.scopes?.intersection(scopes) ?? scopes
                return news.isEmpty ? nil : (subscriber.continuation, news)
            }
        }
        for (continuation, news) in deliveries {
            continuation.yield(news)
        }
    }

    /// Tells every subscriber that all its scopes may have changed: after
    /// news could have been missed (a lost database connection).
    public func publishToAll() {
        let deliveries = state.withLockedValue { state in
            state.subscribers.values.map { ($0.continuation, $0.scopes) }
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
            defer { state.subscribers = [:] }
            return state.subscribers.values.map(\.continuation)
        }
        for continuation in continuations {
            continuation.finish()
        }
    }
}
