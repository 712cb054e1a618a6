import NIOConcurrencyHelpers
import NIOCore

/// One live event per change of a scope, shared by every stream that
/// follows the scope from the same cursor: when a write reaches a thousand
/// readers of a scope, the store is read once and the event encoded once,
/// not a thousand times.
///
/// A stream asks with the scope, its cursor, and the number of the last
/// publish of the scope it read after its news arrived
/// (``ChangeFeed/lastPublish(of:)``). An event is shared only between asks
/// with all three equal: the first ask builds it, after that publish, so it
/// holds every change the others heard of. Asks that come at once wait for
/// the one build. A scope keeps the events of its latest publish only, and
/// none older than ``lifetime``.
///
/// ```swift
/// let seen = feed.lastPublish(of: scope)
/// let (page, shared) = await pages.event(.init(scope: scope, after: cursor, publish: seen)) {
///     await buildPage(scope, after: cursor)   // once, however many streams ask
/// }
/// ```
final class LivePages: Sendable {
    struct Key: Hashable, Sendable {
        var scope: String
        var after: String
        var publish: Int
    }

    /// What a stream writes, where its next page starts, and who could read
    /// the scope once the rows were read (`nil`: a personal scope, or a
    /// store that could not say; each stream asks for itself).
    struct Event: Sendable {
        var bytes: ByteBuffer
        var cursor: String?
        var readers: ScopeReaders? = nil
    }

    /// How long a built event is kept for streams that come late to it.
    static let lifetime: Duration = .seconds(5)
    /// Events kept per scope and publish (one per distinct cursor); past it, each stream builds its own.
    static let perPublish = 16
    /// Scopes with events kept; past it, the oldest go first (what an idle
    /// instance holds after a burst stays bounded).
    static let scopesKept = 1024

    private struct Built {
        var publish: Int
        var events: [String: Task<Event, Never>] = [:]
        var at: ContinuousClock.Instant
    }

    private struct State {
        var scopes: [String: Built] = [:]
        var swept = ContinuousClock.now
        var built = 0
        var shared = 0
    }

    private let state = NIOLockedValueBox(State())

    init() {}

    /// The event for `key`: built by `build` if no stream has asked for it
    /// yet, else the one built (or being built) for the first, and whether
    /// it was shared so.
    func event(_ key: Key, build: @escaping @Sendable () async -> Event) async -> (event: Event, shared: Bool) {
        let now = ContinuousClock.now
        let (task, shared) = state.withLockedValue { state -> (Task<Event, Never>, Bool) in
            if now - state.swept > .seconds(1) || state.scopes.count >= Self.scopesKept {
                state.scopes = state.scopes.filter { now - $0.value.at < Self.lifetime }
                state.swept = now
                if state.scopes.count >= Self.scopesKept {
                    let oldest = state.scopes.sorted { $0.value.at < $1.value.at }.prefix(state.scopes.count - Self.scopesKept / 2)
                    for (scope, _) in oldest { state.scopes[scope] = nil }
                }
            }
            var entry = state.scopes[key.scope]
            if entry == nil || entry!.publish < key.publish {
                entry = Built(publish: key.publish, at: now)
            }
            if entry!.publish == key.publish, let built = entry!.events[key.after] {
                state.shared += 1
                return (built, true)
            }
            let task = Task { await build() }
            state.built += 1
            // An ask for an older publish than the scope's latest builds for itself alone.
            if entry!.publish == key.publish, entry!.events.count < Self.perPublish {
                entry!.events[key.after] = task
                state.scopes[key.scope] = entry
            }
            return (task, false)
        }
        return (await task.value, shared)
    }

    /// Events built, and asks answered with an event built for another stream.
    var counts: (built: Int, shared: Int) {
        state.withLockedValue { ($0.built, $0.shared) }
    }
}
