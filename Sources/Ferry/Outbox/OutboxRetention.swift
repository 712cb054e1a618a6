/// How long settled outbox entries are kept before ``Outbox/purge(retention:)`` deletes them.
///
/// ```swift
/// try database.outbox.purge(retention: OutboxRetention(acknowledged: .zero, rejected: .seconds(7 * 86_400)))
/// ```
public struct OutboxRetention: Sendable, Hashable {
    /// Keep acknowledged entries this long. Default: purge at once.
    public var acknowledged: Duration
    /// Keep rejected entries this long, so the app can show and fix them. Default: 30 days.
    public var rejected: Duration

    public init(acknowledged: Duration = .zero, rejected: Duration = .seconds(30 * 86_400)) {
        self.acknowledged = acknowledged
        self.rejected = rejected
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
