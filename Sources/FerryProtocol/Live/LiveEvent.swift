/// One server-sent event on `GET /v1/live`.
///
/// The stream opens with a `ready` event once the subscription is in place,
/// then sends a `change` event whenever a followed scope has news. The event
/// name is the SSE `event:` field; this value is the JSON in its `data:` field.
///
/// ```
/// event: ready
/// data: {"scopes":["user:alice"]}
///
/// event: change
/// data: {"scopes":["user:alice"]}
/// ```
///
/// A token's life bounds the stream: when it expires, the stream sends an
/// `expired` event and ends.
///
/// A client that asks with `rows=true` also gets `page` events: the changed
/// rows themselves, as a ``PullPage`` in `data:`, when a change is small (at
/// most 100 rows of one scope), so they reach it in one hop. A page moves no
/// cursor: its rows are applied as a pull would apply them, and the client's
/// next pull (which may bring them again) stays the source of truth.
public struct LiveEvent: Sendable, Hashable, Codable {
    /// The SSE event names.
    public enum Name: String, Sendable, Hashable, Codable {
        case ready
        case change
        /// A ``PullPage`` of the changed rows (only with `rows=true`).
        case page
        /// The token that opened the stream has expired: the stream ends.
        /// Open it again with a fresh token.
        case expired
        /// The user can no longer read a scope the stream follows (removed
        /// from a shared scope); the stream ends. Its `scopes` names it.
        case revoked
    }

    /// The followed scopes this event is about.
    public var scopes: [String]

    public init(scopes: [String]) {
        self.scopes = scopes
    }
}
